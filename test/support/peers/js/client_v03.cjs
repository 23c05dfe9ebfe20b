// Talk to an A2A agent with the @a2a-js/sdk 0.3.x client (A2A 0.3): the JS client in interop tests.
// Command line and output: converse.cjs. The SDK's ClientFactory reads the card's 0.3 fields
// (url, preferredTransport, additionalInterfaces; not supportedInterfaces) and is offered only
// TRANSPORT ("JSONRPC" or "HTTP+JSON"), so the card must name it there.
'use strict';

const { randomUUID } = require('node:crypto');
const { converse } = require('./converse.cjs');
const { loadSdk } = require('./sdk.cjs');

const texts = (parts) => parts.map((p) => (p.kind === 'text' ? p.text : '')).join('');

converse(async (cardUrl, transport) => {
  const sdk = await loadSdk('./client');
  const { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, RestTransportFactory } = sdk['./client'];
  const factories = { JSONRPC: JsonRpcTransportFactory, 'HTTP+JSON': RestTransportFactory };
  const factory = new ClientFactory({ ...ClientFactoryOptions.default, transports: [new factories[transport]()] });
  const client = await factory.createFromUrl(cardUrl, '');

  async function send(text, { contextId, taskId }, stream) {
    const message = { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text }], contextId, taskId };
    let task;
    const chunks = [];
    const applied = new Map();  // artifactId -> its text with append honoured
    const statusTexts = [];     // the texts of working status messages
    if (stream) {
      for await (const event of client.sendMessageStream({ message })) {
        // a stream that continues a task may start with an update, without the task
        task ??= event.kind === 'task' ? event : { id: event.taskId, contextId: event.contextId };
        if (event.kind === 'task') task = event;
        else if (event.kind === 'artifact-update') {
          const chunk = texts(event.artifact.parts);
          chunks.push(chunk);
          applied.set(event.artifact.artifactId, (event.append ? applied.get(event.artifact.artifactId) ?? '' : '') + chunk);
        } else if (event.kind === 'status-update') {
          task = { ...task, status: event.status };
          if (event.status.state === 'working' && event.status.message) statusTexts.push(texts(event.status.message.parts));
        } else throw new Error(`unexpected ${event.kind} event`);
      }
    } else {
      task = await client.sendMessage({ message });
      if (task.kind !== 'task') throw new Error(`a message, not a task: ${JSON.stringify(task)}`);
    }
    const waiting = task.status.state === 'input-required';
    const answer = waiting ? texts(task.status.message?.parts ?? [])
      : stream ? chunks.join('') : (task.artifacts ?? []).map((a) => texts(a.parts)).join('');
    return { contextId: task.contextId, taskId: task.id, state: task.status.state, answer, chunks,
      applied: [...applied.values()].join(''), statusTexts };
  }

  // a 0.3 transport does not name itself: the one offered (the factory fails without it)
  return { transport, protocolVersion: '0.3', send };
});
