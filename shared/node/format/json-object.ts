import { deflateRawSync } from 'node:zlib';
import { Compression } from '../../format/constants.ts';
import { expandPayload } from './compression.ts';
import type { SodiumProvider } from '../crypto/provider.ts';
import { ObjectFormatError, openObject, sealObject } from './sealed-object.ts';

const MAX_JSON_BYTES = 256 << 20;

/** Seals a JSON document (config, snapshot): raw DEFLATE of its UTF-8, sealed with the metadata key. */
export function sealJson(
  sodium: SodiumProvider,
  key: Uint8Array,
  magic: string,
  binding: string,
  value: unknown,
  nonce?: Uint8Array,
): Buffer {
  const payload = deflateRawSync(Buffer.from(JSON.stringify(value), 'utf8'));
  return sealObject(sodium, {
    magic,
    flags: Compression.deflateRaw,
    binding: Buffer.from(binding, 'utf8'),
    payload,
    key,
    nonce,
  });
}

export function openJson(
  sodium: SodiumProvider,
  key: Uint8Array,
  magic: string,
  binding: string,
  sealed: Uint8Array,
): unknown {
  const { flags, payload } = openObject(sodium, sealed, {
    magic,
    binding: Buffer.from(binding, 'utf8'),
    key,
  });
  let text: Buffer;
  try {
    text = expandPayload(flags, payload, { max: MAX_JSON_BYTES }, binding);
    return JSON.parse(text.toString('utf8'));
  } catch {
    throw new ObjectFormatError('bad-content', `${binding} does not hold valid JSON`);
  }
}
