// Start-up shared by the JS peer agents (agent_v1.cjs, agent_v03.cjs): the same servers, routes
// and cards with either SDK version, whose server entry points have the same names.
'use strict';

const grpc = require('@grpc/grpc-js');
const http = require('node:http');
const express = require('express');

// Arguments ``--port N --grpc-port N`` (0, the default, picks a free port) and
// ``--legacy`` (A2A 0.3 through the SDK's compat layer: see serveAgents).
function options(argv) {
  const out = { port: 0, grpcPort: 0, legacy: false };
  for (let i = 0; i < argv.length; i += 1) {
    if (argv[i] === '--port') out.port = Number(argv[++i]);
    else if (argv[i] === '--grpc-port') out.grpcPort = Number(argv[++i]);
    else if (argv[i] === '--legacy') out.legacy = true;
    else throw new Error(`unknown argument ${argv[i]}`);
  }
  return out;
}

// Start an HTTP server and a gRPC server on 127.0.0.1, print the ready line {"url", "grpc"}
// once both accept connections, stop both on SIGTERM / SIGINT. ``build(url, grpcAddress,
// grpcServer)`` returns the HTTP request listener (an express app) for the addresses bound, and
// adds its services to ``grpcServer``.
function serve({ port, grpcPort }, build) {
  const host = '127.0.0.1';
  const server = http.createServer();
  server.listen(port, host, () => {
    const url = `http://${host}:${server.address().port}`;
    const grpcServer = new grpc.Server();
    grpcServer.bindAsync(`${host}:${grpcPort}`, grpc.ServerCredentials.createInsecure(), (err, bound) => {
      if (err) throw err;
      const grpcAddress = `${host}:${bound}`;
      const app = build(url, grpcAddress, grpcServer);
      server.on('request', app);
      process.stdout.write(JSON.stringify({ url, grpc: grpcAddress }) + '\n');
      const stop = () => {
        grpcServer.forceShutdown();
        server.closeAllConnections();
        server.close(() => process.exit(0));
      };
      process.on('SIGTERM', stop);
      process.on('SIGINT', stop);
    });
  });
}

// The SDK's entry points an agent needs (see sdk.cjs); with ``legacy``, its 0.3 compat layer's too.
const ENTRY_POINTS = ['.', './server', './server/express', './server/grpc'];
const LEGACY_ENTRY_POINTS = ['./compat/v0_3', './compat/v0_3/server/grpc'];

// Serve ``executor`` once per binding, each under its own path with a card naming only that
// binding (``card(binding, address, legacy)``), all on one in-memory task store:
// {url}/jsonrpc (JSON-RPC), {url}/rest (HTTP+JSON), {url}/grpc (its card; the gRPC server).
// ``--legacy`` in ``argv``: through the 1.x SDK's compat layer for A2A 0.3 (``legacyCompat`` on
// the card, JSON-RPC and HTTP+JSON handlers; its LegacyA2AService on the gRPC server), whose
// cards name 0.3 interfaces.
function serveAgents(argv, sdk, card, executor) {
  const { legacy, ...ports } = options(argv);
  const { AGENT_CARD_PATH } = sdk['.'];
  const { DefaultRequestHandler, InMemoryTaskStore } = sdk['./server'];
  const { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } = sdk['./server/express'];
  const { A2AService, grpcService } = sdk['./server/grpc'];
  const { LegacyA2AService, legacyGrpcService } = legacy ? sdk['./compat/v0_3/server/grpc'] : {};
  const compat = legacy ? { legacyCompat: { enabled: true } } : {};
  serve(ports, (url, grpcAddress, grpcServer) => {
    const store = new InMemoryTaskStore();
    const handler = (binding, address) => new DefaultRequestHandler(card(binding, address, legacy), store, executor);
    const userBuilder = UserBuilder.noAuthentication;
    const app = express();
    const mount = (path, requestHandler, transport) => {
      app.use(`/${path}/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: requestHandler, ...compat }));
      if (transport) app.use(`/${path}`, transport({ requestHandler, userBuilder, ...compat }));
    };
    mount('jsonrpc', handler('JSONRPC', `${url}/jsonrpc`), jsonRpcHandler);
    mount('rest', handler('HTTP+JSON', `${url}/rest`), restHandler);
    const overGrpc = handler('GRPC', grpcAddress);
    mount('grpc', overGrpc);
    if (legacy) grpcServer.addService(LegacyA2AService, legacyGrpcService({ requestHandler: overGrpc, userBuilder }));
    else grpcServer.addService(A2AService, grpcService({ requestHandler: overGrpc, userBuilder }));
    return app;
  });
}

module.exports = { ENTRY_POINTS, LEGACY_ENTRY_POINTS, serveAgents };
