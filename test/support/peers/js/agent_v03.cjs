// A scripted agent served by @a2a-js/sdk 0.3.x (A2A 0.3): the JS peer in interop tests.
//
//   node agent_v03.cjs [--port N] [--grpc-port N]
//
// Binds 127.0.0.1 (port 0 picks a free port), prints one JSON line
// {"url": "http://127.0.0.1:PORT", "grpc": "127.0.0.1:GPORT"} when it serves, stops on SIGTERM.
// One agent per binding, each with a 0.3 card naming only that binding (url, preferredTransport
// and additionalInterfaces):
//   {url}/jsonrpc   JSON-RPC       card {url}/jsonrpc/.well-known/agent-card.json
//   {url}/rest      HTTP+JSON      card {url}/rest/.well-known/agent-card.json
//   {url}/grpc      gRPC at GPORT  card {url}/grpc/.well-known/agent-card.json
// They share one in-memory task store; what they say is in behaviour.cjs. The SDK's ES modules
// serve, or its CommonJS build with A2A_JS_MODULE_FORMAT=cjs (see sdk.cjs).
'use strict';

const { randomUUID } = require('node:crypto');
const { play } = require('./behaviour.cjs');
const { loadSdk } = require('./sdk.cjs');
const { ENTRY_POINTS, serveAgents } = require('./serve.cjs');

const now = () => new Date().toISOString();

function status(taskId, contextId, state, text) {
  const message = text === undefined ? undefined : {
    kind: 'message', messageId: randomUUID(), role: 'agent', parts: [{ kind: 'text', text }], taskId, contextId,
  };
  const final = state !== 'working';
  return { kind: 'status-update', taskId, contextId, status: { state, message, timestamp: now() }, final };
}

class ScriptedExecutor {
  async execute(context, bus) {
    const { taskId, contextId, task, userMessage } = context;
    const text = userMessage.parts.map((p) => (p.kind === 'text' ? p.text : '')).join('');
    const continuing = task?.status?.state === 'input-required';
    if (!task) {
      bus.publish({ kind: 'task', id: taskId, contextId, status: { state: 'submitted', timestamp: now() }, history: [userMessage] });
    }
    bus.publish(status(taskId, contextId, 'working'));
    const artifactId = randomUUID();
    await play(text, contextId, continuing, {
      question: (question) => bus.publish(status(taskId, contextId, 'input-required', question)),
      chunk: (chunk, i, last) => bus.publish({
        kind: 'artifact-update', taskId, contextId, append: i > 0, lastChunk: last,
        artifact: { artifactId, name: 'answer', parts: [{ kind: 'text', text: chunk }] },
      }),
      completed: () => bus.publish(status(taskId, contextId, 'completed')),
    });
    bus.finished();
  }

  async cancelTask(taskId, bus) {
    bus.publish(status(taskId, '', 'canceled'));
    bus.finished();
  }
}

function card(transport, url) {
  return {
    name: `js-${transport}`, description: `@a2a-js/sdk scripted agent over ${transport}`, version: '1.0.0',
    protocolVersion: '0.3.0', url, preferredTransport: transport, additionalInterfaces: [{ url, transport }],
    capabilities: { streaming: true, pushNotifications: false },
    defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'],
    skills: [{ id: 'chat', name: 'chat', description: 'echo, stream, ask, remember, recall', tags: ['test'] }],
  };
}

loadSdk(...ENTRY_POINTS).then((sdk) => {
  serveAgents(process.argv.slice(2), sdk, card, new ScriptedExecutor());
}).catch((err) => { process.stderr.write(`${err.stack || err}\n`); process.exit(1); });
