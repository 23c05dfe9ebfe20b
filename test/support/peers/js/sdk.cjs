// Load @a2a-js/sdk's entry points in the module format asked: its ES modules ("esm", what an
// `import` gets: the SDK's samples and README) or its CommonJS build ("cjs", what `require`
// gets: an app compiled to CommonJS). The two builds differ in behaviour: in the 0.3.x
// CommonJS build each entry point bundles its own error classes, so the errors of
// '@a2a-js/sdk/server' are not A2AErrors to '@a2a-js/sdk/server/express', which answers them
// as internal errors (-32603) instead of their own codes.
//
// The format comes from A2A_JS_MODULE_FORMAT (default "esm"); the package from NODE_PATH.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { pathToFileURL } = require('node:url');

const FORMAT = process.env.A2A_JS_MODULE_FORMAT || 'esm';

// {subpath: module} for the subpaths asked ('.', './server', './server/express', ...)
async function loadSdk(...subpaths) {
  if (!['esm', 'cjs'].includes(FORMAT)) throw new Error(`A2A_JS_MODULE_FORMAT must be esm or cjs, not ${FORMAT}`);
  const root = (process.env.NODE_PATH || '').split(path.delimiter).map((dir) => path.join(dir, '@a2a-js', 'sdk'))
    .find((dir) => fs.existsSync(path.join(dir, 'package.json')));
  if (!root) throw new Error('@a2a-js/sdk is in no directory of NODE_PATH');
  const { exports } = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
  const out = {};
  for (const subpath of subpaths) {
    out[subpath] = FORMAT === 'cjs'
      ? require(path.join(root, exports[subpath].require))
      : await import(pathToFileURL(path.join(root, exports[subpath].import)).href);
  }
  return out;
}

module.exports = { loadSdk, FORMAT };
