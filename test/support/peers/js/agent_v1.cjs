// A scripted agent served by @a2a-js/sdk 1.x (A2A 1.0): the JS peer in interop tests.
//
//   node agent_v1.cjs [--port N] [--grpc-port N] [--legacy]
//
// Binds 127.0.0.1 (port 0 picks a free port), prints one JSON line
// {"url": "http://127.0.0.1:PORT", "grpc": "127.0.0.1:GPORT"} when it serves, stops on SIGTERM.
// One agent per binding, each with a card naming only that binding:
//   {url}/jsonrpc   JSON-RPC       card {url}/jsonrpc/.well-known/agent-card.json
//   {url}/rest      HTTP+JSON      card {url}/rest/.well-known/agent-card.json
//   {url}/grpc      gRPC at GPORT  card {url}/grpc/.well-known/agent-card.json
// With --legacy they speak A2A 0.3 through the SDK's compat layer, their cards naming 0.3
// interfaces. They share one in-memory task store; what they say is in behaviour.cjs. The
// SDK's ES modules serve, or its CommonJS build with A2A_JS_MODULE_FORMAT=cjs (see sdk.cjs).
'use strict';

const { randomUUID } = require('node:crypto');
const { play } = require('./behaviour.cjs');
const { loadSdk } = require('./sdk.cjs');
const { ENTRY_POINTS, LEGACY_ENTRY_POINTS, serveAgents } = require('./serve.cjs');

let Role, TaskState, AgentEvent;  // set once the SDK is loaded (see main)

const textPart = (text) => ({ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' });
const now = () => new Date().toISOString();

function status(taskId, contextId, state, text) {
  const message = text === undefined ? undefined : {
    messageId: randomUUID(), role: Role.ROLE_AGENT, parts: [textPart(text)], taskId, contextId,
    metadata: undefined, extensions: [], referenceTaskIds: [],
  };
  return AgentEvent.statusUpdate({ taskId, contextId, status: { state, message, timestamp: now() }, metadata: undefined });
}

class ScriptedExecutor {
  async execute(context, bus) {
    const { taskId, contextId, task, userMessage } = context;
    const text = userMessage.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
    const continuing = task?.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED;
    bus.publish(AgentEvent.task(task ?? {
      id: taskId, contextId, status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: now() },
      artifacts: [], history: [userMessage], metadata: undefined,
    }));
    bus.publish(status(taskId, contextId, TaskState.TASK_STATE_WORKING));
    const artifactId = randomUUID();
    await play(text, contextId, continuing, {
      question: (question) => bus.publish(status(taskId, contextId, TaskState.TASK_STATE_INPUT_REQUIRED, question)),
      chunk: (chunk, i, last) => bus.publish(AgentEvent.artifactUpdate({
        taskId, contextId, append: i > 0, lastChunk: last, metadata: undefined,
        artifact: { artifactId, name: 'answer', description: '', parts: [textPart(chunk)], metadata: undefined, extensions: [] },
      })),
      completed: () => bus.publish(status(taskId, contextId, TaskState.TASK_STATE_COMPLETED)),
    });
    bus.finished();
  }

  async cancelTask(taskId, bus) {
    bus.publish(status(taskId, '', TaskState.TASK_STATE_CANCELED));
    bus.finished();
  }
}

function card(binding, url, version) {
  return {
    name: `js-${binding}`, description: `@a2a-js/sdk scripted agent over ${binding}`, version: '1.0.0',
    supportedInterfaces: [{ url, protocolBinding: binding, tenant: '', protocolVersion: version }],
    provider: undefined, capabilities: { streaming: true, pushNotifications: false, extensions: [] },
    securitySchemes: {}, securityRequirements: [], defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'],
    skills: [{ id: 'chat', name: 'chat', description: 'echo, stream, ask, remember, recall', tags: ['test'],
      examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
    signatures: [],
  };
}

const legacy = process.argv.includes('--legacy');
loadSdk(...ENTRY_POINTS, ...(legacy ? LEGACY_ENTRY_POINTS : [])).then((sdk) => {
  ({ Role, TaskState } = sdk['.']);
  ({ AgentEvent } = sdk['./server']);
  const version = legacy ? sdk['./compat/v0_3'].A2A_LEGACY_PROTOCOL_VERSION : sdk['.'].A2A_PROTOCOL_VERSION;
  serveAgents(process.argv.slice(2), sdk, (binding, url) => card(binding, url, version), new ScriptedExecutor());
}).catch((err) => { process.stderr.write(`${err.stack || err}\n`); process.exit(1); });
