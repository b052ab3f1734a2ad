import { describe, expect, it } from '@jest/globals';
import { ValidationError } from '../../errors.js';
import { connectTimeoutMs } from './connect.js';

describe('how long a first handshake may take', () => {
  it('is 3 s unless told otherwise', () => {
    expect(connectTimeoutMs({})).toBe(3_000);
    expect(connectTimeoutMs({ MESH_NATS_CONNECT_TIMEOUT_MS: '' })).toBe(3_000);
  });

  it('takes whole milliseconds from 100 to 120000', () => {
    expect(connectTimeoutMs({ MESH_NATS_CONNECT_TIMEOUT_MS: '15000' })).toBe(15_000);
    for (const bad of ['abc', '1.5', '99', '120001', '-5', '1e3x']) {
      expect(() => connectTimeoutMs({ MESH_NATS_CONNECT_TIMEOUT_MS: bad })).toThrow(ValidationError);
      expect(() => connectTimeoutMs({ MESH_NATS_CONNECT_TIMEOUT_MS: bad })).toThrow(/MESH_NATS_CONNECT_TIMEOUT_MS/);
    }
  });
});
