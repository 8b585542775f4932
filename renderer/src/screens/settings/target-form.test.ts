import { describe, expect, it } from 'vitest';
import { emptyFields, validateTarget } from './target-form.ts';

describe('target form validation', () => {
  it('names every bad field with its reason', () => {
    const { draft, errors } = validateTarget(
      { ...emptyFields, name: 'bad name!', endpoint: 'ftp://x', bucket: 'ab', accessKeyId: '' },
      false,
    );
    expect(draft).toBeUndefined();
    expect(errors).toMatchObject({
      name: expect.stringMatching(/letters, digits/),
      endpoint: 'Endpoint must be an http:// or https:// URL.',
      bucket: 'Bucket names have at least 3 characters.',
      accessKeyId: 'Access key id is required.',
      secret: 'Secret access key is required.',
    });
  });

  it('builds a draft; an empty secret keeps the saved one when editing', () => {
    const fields = {
      ...emptyFields,
      name: 'aws',
      endpoint: 'https://s3.example.test',
      bucket: 'bkt',
      accessKeyId: 'AK',
    };
    expect(validateTarget(fields, false).errors.secret).toBeDefined();
    const { draft } = validateTarget(fields, true);
    expect(draft).toEqual({
      name: 'aws',
      config: {
        kind: 's3',
        endpoint: 'https://s3.example.test',
        region: 'us-east-1',
        bucket: 'bkt',
        accessKeyId: 'AK',
        pathStyle: false,
        checksums: 'when-supported',
      },
      secret: undefined,
    });
    expect(validateTarget({ ...emptyFields, name: 'drive', kind: 'dir', path: '' }, false).errors.path).toBe(
      'Folder path is required.',
    );
  });
});
