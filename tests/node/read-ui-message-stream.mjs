// Reads a UI message stream the way the AI SDK's useChat does (the chunk parser of
// DefaultChatTransport, then readUIMessageStream) and prints, as one JSON object, the
// final UIMessage, the errors reported on the way, and the finish chunk's reason.
// Usage: node read-ui-message-stream.mjs URL
import { parseJsonEventStream, readUIMessageStream, uiMessageChunkSchema } from 'ai';

const url = process.argv[2];
const response = await fetch(url, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ messages: [] }),
});

const errors = [];
const finish = { seen: false, reason: null };

const chunks = parseJsonEventStream({
  stream: response.body,
  schema: uiMessageChunkSchema,
}).pipeThrough(
  new TransformStream({
    transform(result, controller) {
      if (!result.success) {
        throw result.error;
      }
      if (result.value.type === 'finish') {
        finish.seen = true;
        finish.reason = result.value.finishReason ?? null;
      }
      controller.enqueue(result.value);
    },
  }),
);

let message = null;
for await (const snapshot of readUIMessageStream({
  stream: chunks,
  onError: error => errors.push(String(error?.message ?? error)),
})) {
  message = snapshot;
}

process.stdout.write(
  JSON.stringify({ headers: Object.fromEntries(response.headers), message, errors, finish }) +
    '\n',
);
