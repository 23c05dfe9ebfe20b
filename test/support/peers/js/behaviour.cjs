// What the JS peer agents say, whatever the SDK version that carries it (agent_v1.cjs,
// agent_v03.cjs). No dependencies. ``ctx`` is the contextId.
//   "ask"         input-required "which city?"; the reply: "continued[ctx]: TEXT"
//   "stream"      "Hello there. ", "How are you today? ", "Fine.": one artifact, appended, 30 ms apart
//   "remember X"  "ok, I will remember X"; then "recall": "you told me X" ("I remember nothing")
//   anything else "echo[ctx]: TEXT"
'use strict';

const QUESTION = 'which city?';
const STREAM_CHUNKS = ['Hello there. ', 'How are you today? ', 'Fine.'];
const CHUNK_PAUSE_MS = 30;

// One memory per contextId: what "remember X" stored. Lost when the process ends.
const memory = new Map();

// The turn for ``text`` in ``contextId``; ``continuing`` is true when the message continues a
// task that asked a question. Returns {question} (the task stays open: input-required) or
// {chunks} (the answer, one artifact, the chunks appended in order).
function turn(text, contextId, continuing) {
  if (continuing) return { chunks: [`continued[${contextId}]: ${text}`] };
  if (text === 'ask') return { question: QUESTION };
  if (text === 'stream') return { chunks: STREAM_CHUNKS };
  if (text.startsWith('remember ')) {
    const thing = text.slice('remember '.length);
    memory.set(contextId, thing);
    return { chunks: [`ok, I will remember ${thing}`] };
  }
  if (text === 'recall') {
    const thing = memory.get(contextId);
    return { chunks: [thing === undefined ? 'I remember nothing' : `you told me ${thing}`] };
  }
  return { chunks: [`echo[${contextId}]: ${text}`] };
}

const pause = () => new Promise((resolve) => setTimeout(resolve, CHUNK_PAUSE_MS));

// Play the turn for ``text`` through ``say``, the agent's words in its SDK's events:
// say.question(text), or say.chunk(text, index, last) for each chunk (a pause between them)
// then say.completed().
async function play(text, contextId, continuing, say) {
  const plan = turn(text, contextId, continuing);
  if (plan.question) return say.question(plan.question);
  for (const [i, chunk] of plan.chunks.entries()) {
    if (i) await pause();
    say.chunk(chunk, i, i === plan.chunks.length - 1);
  }
  return say.completed();
}

module.exports = { play };
