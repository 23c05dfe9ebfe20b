// The command line shared by the JS client scripts (client_v1.cjs, client_v03.cjs):
//
//   node client_v*.cjs CARD_URL TRANSPORT [--stream] TEXT...
//
// Sends each TEXT in turn in one conversation: the contextId of the first reply, and the taskId
// while the agent waits for input. Prints one JSON line per TEXT: {"transport",
// "protocolVersion", "contextId", "taskId" (of the task that answered), "state", "answer",
// "chunks", "applied", "statusTexts"} (when streaming: chunks, the text of each artifact update in order, which a
// client that ignores ``append`` concatenates into ``answer``; applied, the artifacts' text with ``append`` honoured;
// statusTexts, the texts of "working" status messages). An error is printed to stderr and ends the process with
// status 1.
'use strict';

// ``open(cardUrl, transport)`` resolves to {transport, protocolVersion, send(text, ids, stream)}
// (the transport and A2A version the client uses), where ``send`` resolves to the turn's
// {contextId, taskId, state, answer, chunks}.
function converse(open) {
  const [cardUrl, transport, ...rest] = process.argv.slice(2);
  const stream = rest[0] === '--stream';
  const run = async () => {
    const peer = await open(cardUrl, transport);
    let ids = { contextId: undefined, taskId: undefined };
    for (const text of stream ? rest.slice(1) : rest) {
      const turn = await peer.send(text, ids, stream);
      ids = { contextId: turn.contextId, taskId: turn.state === 'input-required' ? turn.taskId : undefined };
      process.stdout.write(JSON.stringify({ transport: peer.transport, protocolVersion: peer.protocolVersion, ...turn })
        + '\n');
    }
  };
  run().catch((err) => { process.stderr.write(`${err.stack || err}\n`); process.exit(1); });
}

module.exports = { converse };
