/**
 * The payload converter of the workflows and activities: Temporal's default, except that a payload it
 * cannot decode becomes an {@link UndecodablePayload} value instead of an error. A signal's arguments
 * are decoded before its handler runs, outside anything the workflow can catch, so a target owner's
 * `targetCommit` sent in another encoding (a codec's, protobuf, broken JSON) failed every later
 * workflow task of the run: its deadline and a cancellation never took effect. As a value, it meets
 * the parse every input, report and request gets, and is refused as any malformed one is.
 * Bundled into the workflow code too (./workflow-bundle.ts): keep it free of I/O and of Node's modules.
 */
import { DefaultPayloadConverter, type Payload, type PayloadConverter } from '@temporalio/common';

/** What an undecodable payload decodes to: its encoding (metadata), and why it was refused. */
interface UndecodablePayload {
  undecodablePayload: { encoding: string; reason: string };
}

class TolerantPayloadConverter implements PayloadConverter {
  private readonly inner = new DefaultPayloadConverter();

  toPayload<T>(value: T): Payload {
    return this.inner.toPayload(value);
  }

  fromPayload<T>(payload: Payload): T {
    try {
      return this.inner.fromPayload<T>(payload);
    } catch (err) {
      const encoding = payload.metadata?.encoding ? new TextDecoder().decode(payload.metadata.encoding) : '(none)';
      const undecodable: UndecodablePayload = { undecodablePayload: { encoding, reason: String((err as Error)?.message ?? err).slice(0, 200) } };
      return undecodable as T;
    }
  }
}

export const payloadConverter = new TolerantPayloadConverter();
