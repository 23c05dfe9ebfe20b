// Start-up shared by the JS peer agents (agent_v1.cjs, agent_v03.cjs): the same servers, routes
// and cards with either SDK version, whose server entry points have the same names.
'use strict';

const grpc = require('@grpc/grpc-js');
const http = require('node:http');
const express = require('express');

// Arguments ``--port N --grpc-port N`` (0, the default, picks a free port).
function ports(argv) {
  const out = { port: 0, grpcPort: 0 };
  for (let i = 0; i < argv.length; i += 2) {
    if (argv[i] === '--port') out.port = Number(argv[i + 1]);
    else if (argv[i] === '--grpc-port') out.grpcPort = Number(argv[i + 1]);
    else throw new Error(`unknown argument ${argv[i]}`);
  }
  return out;
}

// Start an HTTP server and a gRPC server on 127.0.0.1, print the ready line {"url", "grpc"}
// once both accept connections, stop both on SIGTERM / SIGINT. ``build(url, grpcAddress,
// grpcServer)`` returns the HTTP request listener (an express app) for the addresses bound, and
// adds its services to ``grpcServer``.
function serve(argv, build) {
  const { port, grpcPort } = ports(argv);
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

// The SDK's entry points an agent needs (see sdk.cjs).
const ENTRY_POINTS = ['.', './server', './server/express', './server/grpc'];

// Serve ``executor`` once per binding, each under its own path with a card naming only that
// binding (``card(binding, address)``), all on one in-memory task store:
// {url}/jsonrpc (JSON-RPC), {url}/rest (HTTP+JSON), {url}/grpc (its card; the gRPC server).
function serveAgents(argv, sdk, card, executor) {
  const { AGENT_CARD_PATH } = sdk['.'];
  const { DefaultRequestHandler, InMemoryTaskStore } = sdk['./server'];
  const { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } = sdk['./server/express'];
  const { A2AService, grpcService } = sdk['./server/grpc'];
  serve(argv, (url, grpcAddress, grpcServer) => {
    const store = new InMemoryTaskStore();
    const handler = (binding, address) => new DefaultRequestHandler(card(binding, address), store, executor);
    const userBuilder = UserBuilder.noAuthentication;
    const app = express();
    const mount = (path, requestHandler, transport) => {
      app.use(`/${path}/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: requestHandler }));
      if (transport) app.use(`/${path}`, transport({ requestHandler, userBuilder }));
    };
    mount('jsonrpc', handler('JSONRPC', `${url}/jsonrpc`), jsonRpcHandler);
    mount('rest', handler('HTTP+JSON', `${url}/rest`), restHandler);
    const overGrpc = handler('GRPC', grpcAddress);
    mount('grpc', overGrpc);
    grpcServer.addService(A2AService, grpcService({ requestHandler: overGrpc, userBuilder }));
    return app;
  });
}

module.exports = { ENTRY_POINTS, serveAgents };
