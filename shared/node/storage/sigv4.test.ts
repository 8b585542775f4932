import { createHash, createHmac, randomBytes } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';
import { describe, expect, it } from 'vitest';
import { S3Signer, UNSIGNED_PAYLOAD, sha256Hex } from './sigv4.ts';

const EXAMPLE_KEY = {
  accessKeyId: 'AKIAIOSFODNN7EXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
  region: 'us-east-1',
};

/** The SHA-256 (an HMAC when given a secret) @smithy/signature-v4 is built with. */
class Sha256 {
  private readonly h;
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    const key =
      secret === undefined || typeof secret === 'string'
        ? secret
        : ArrayBuffer.isView(secret)
          ? new Uint8Array(secret.buffer, secret.byteOffset, secret.byteLength)
          : new Uint8Array(secret);
    this.h = key === undefined ? createHash('sha256') : createHmac('sha256', key);
  }
  update(d: Uint8Array | string) {
    this.h.update(d);
  }
  digest() {
    return Promise.resolve(new Uint8Array(this.h.digest()));
  }
}

describe('SigV4 for S3 object requests', () => {
  it("gives AWS's published signature for its GET Object example", () => {
    // docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html, "Example: GET Object".
    const headers = new S3Signer(EXAMPLE_KEY).sign(
      {
        method: 'GET',
        path: '/test.txt',
        headers: { host: 'examplebucket.s3.amazonaws.com', range: 'bytes=0-9' },
        payloadHash: sha256Hex(''),
      },
      new Date('2013-05-24T00:00:00Z'),
    );
    expect(headers['x-amz-date']).toBe('20130524T000000Z');
    expect(headers.authorization).toBe(
      'AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, ' +
        'SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, ' +
        'Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41',
    );
  });

  it('signs as @smithy/signature-v4 does, for the PUTs and GETs Cairn sends, across days', async () => {
    const key = {
      accessKeyId: 'AKID',
      secretAccessKey: randomBytes(20).toString('base64'),
      region: 'eu-west-3',
    };
    const smithy = new SignatureV4({
      credentials: key,
      region: key.region,
      service: 's3',
      sha256: Sha256,
      uriEscapePath: false,
    });
    const ours = new S3Signer(key);
    const body = randomBytes(1000);
    const cases: { method: string; path: string; payloadHash: string; extra: Record<string, string> }[] = [
      {
        method: 'PUT',
        path: '/bkt/data/ab/ab12',
        payloadHash: UNSIGNED_PAYLOAD,
        extra: { 'content-length': '1000', 'x-amz-checksum-crc32': 'DUoRhQ==' },
      },
      {
        method: 'PUT',
        path: '/bkt/index/0001',
        payloadHash: sha256Hex(body),
        extra: { 'content-length': '1000' },
      },
      {
        method: 'GET',
        path: '/prefix/bkt/a%20b/%21%27%28%29%2A',
        payloadHash: sha256Hex(''),
        extra: { range: 'bytes=5-4199999' },
      },
    ];
    for (const [i, c] of cases.entries()) {
      const at = new Date(Date.UTC(2026, 10, 29 + i, 23, 59, 59));
      const headers = { host: 'bkt.s3.example.com:9000', ...c.extra };
      const want = await smithy.sign(
        {
          method: c.method,
          protocol: 'https:',
          hostname: 'bkt.s3.example.com',
          port: 9000,
          path: c.path,
          headers: { ...headers, 'x-amz-content-sha256': c.payloadHash },
        },
        { signingDate: at },
      );
      const got = ours.sign({ method: c.method, path: c.path, headers, payloadHash: c.payloadHash }, at);
      expect(got.authorization, c.path).toBe(want.headers.authorization);
      expect(got['x-amz-date']).toBe(want.headers['x-amz-date']);
    }
  });
});
