import path from 'node:path';
import { Engine } from '../../shared/node/engine/engine.ts';
import type { S3TargetConfig } from '../../shared/settings.ts';
import { tempDir } from './fixtures.ts';
import { startProxy, type Proxy } from './proxy.ts';
import { startVersitygw, type S3Server } from './versitygw.ts';

/** The target settings of a bucket on the test server (or reached through `endpoint`, a proxy). */
export function s3TargetConfig(s3: S3Server, bucket: string, endpoint = s3.endpoint): S3TargetConfig {
  return {
    kind: 's3',
    endpoint,
    bucket,
    region: 'us-east-1',
    accessKeyId: s3.accessKeyId,
    pathStyle: true,
    checksums: 'when-supported',
  };
}

export interface EngineEnv {
  s3: S3Server;
  /** Between the engine and the server (`viaProxy`), to inject faults; null otherwise. */
  proxy: Proxy | null;
  engine: Engine;
}

/**
 * A real versitygw, a keystore in a fresh folder (weak KDF for speed) and one S3 target on a fresh
 * bucket, named `target` (default "s3", or "via-proxy" through a fault-injecting proxy).
 */
export async function startEngineEnv(o: {
  passphrase: string;
  viaProxy?: boolean;
  target?: string;
  home?: string;
}): Promise<EngineEnv> {
  process.env.CAIRN_TEST_WEAK_KDF = '1';
  const s3 = await startVersitygw();
  const proxy = o.viaProxy ? await startProxy(s3.endpoint) : null;
  const engine = await Engine.init(o.home ?? path.join(tempDir(), 'home'), o.passphrase);
  await engine.addTarget(
    o.target ?? (proxy ? 'via-proxy' : 's3'),
    s3TargetConfig(s3, await s3.createBucket(), proxy?.endpoint),
    s3.secretAccessKey,
  );
  return { s3, proxy, engine };
}

export async function stopEngineEnv(env: EngineEnv | undefined): Promise<void> {
  env?.engine.close();
  await env?.proxy?.close();
  await env?.s3.stop();
}
