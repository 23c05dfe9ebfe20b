// Talk to an A2A agent with the @a2a-js/sdk 1.x client (A2A 1.0): the JS client in interop tests.
// Command line and output: converse.cjs. The SDK's ClientFactory reads the card and is offered
// only TRANSPORT ("JSONRPC", "HTTP+JSON" or "GRPC"), so the card must name it.
'use strict';

const { randomUUID } = require('node:crypto');
const { converse } = require('./converse.cjs');
const { loadSdk } = require('./sdk.cjs');

const texts = (parts) => parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
const textPart = (text) => ({ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' });

converse(async (cardUrl, transport) => {
  const sdk = await loadSdk('.', './client', ...(transport === 'GRPC' ? ['./client/grpc'] : []));
  const { Role, TaskState } = sdk['.'];
  const { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, RestTransportFactory } = sdk['./client'];
  const factories = { JSONRPC: JsonRpcTransportFactory, 'HTTP+JSON': RestTransportFactory,
    GRPC: sdk['./client/grpc']?.GrpcTransportFactory };
  const factory = new ClientFactory({ ...ClientFactoryOptions.default, transports: [new factories[transport]()] });
  const client = await factory.createFromUrl(cardUrl, '');
  const stateName = (state) => TaskState[state].replace('TASK_STATE_', '').toLowerCase().replace('_', '-');

  async function send(text, { contextId, taskId }, stream) {
    const request = {
      tenant: '', configuration: undefined, metadata: undefined,
      message: { messageId: randomUUID(), role: Role.ROLE_USER, parts: [textPart(text)], contextId: contextId ?? '',
        taskId: taskId ?? '', metadata: undefined, extensions: [], referenceTaskIds: [] },
    };
    let task;
    const chunks = [];
    const applied = new Map();  // artifactId -> its text with append honoured
    const statusTexts = [];     // the texts of working status messages
    if (stream) {
      for await (const { payload: { $case, value } } of client.sendMessageStream(request)) {
        // a stream that continues a task may start with an update, without the task
        task ??= $case === 'task' ? value : { id: value.taskId, contextId: value.contextId, artifacts: [] };
        if ($case === 'task') task = value;
        else if ($case === 'artifactUpdate') {
          const chunk = texts(value.artifact.parts);
          chunks.push(chunk);
          applied.set(value.artifact.artifactId, (value.append ? applied.get(value.artifact.artifactId) ?? '' : '') + chunk);
        } else if ($case === 'statusUpdate') {
          task = { ...task, status: value.status };
          if (value.status.state === TaskState.TASK_STATE_WORKING && value.status.message) {
            statusTexts.push(texts(value.status.message.parts));
          }
        } else throw new Error(`unexpected ${$case} event`);
      }
    } else {
      task = await client.sendMessage(request);
      if (!task.status) throw new Error(`a message, not a task: ${JSON.stringify(task)}`);
    }
    const waiting = task.status.state === TaskState.TASK_STATE_INPUT_REQUIRED;
    const answer = waiting ? texts(task.status.message?.parts ?? [])
      : stream ? chunks.join('') : task.artifacts.map((a) => texts(a.parts)).join('');
    return { contextId: task.contextId, taskId: task.id, state: stateName(task.status.state), answer, chunks,
      applied: [...applied.values()].join(''), statusTexts };
  }

  return { transport: client.transport.protocolName, protocolVersion: client.protocolVersion, send };
});
