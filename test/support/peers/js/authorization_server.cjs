// An OAuth 2.0 / OpenID Connect authorization server for the sign-in tests: oidc-provider
// (OpenID Certified), with the device authorization grant (RFC 8628), refresh tokens,
// revocation (RFC 7009) and introspection (RFC 7662) on.
//
//   node authorization_server.cjs [--port N]
//
// Binds 127.0.0.1 (port 0 picks a free port); its issuer is http://127.0.0.1:PORT. Prints one
// JSON line {"url": ISSUER, "discovery": ISSUER/.well-known/openid-configuration} when it
// serves; stops on SIGTERM. oidc-provider comes from NODE_PATH (an ES module, imported by path).
//
// The person signs in on the provider's own pages: the user code page (/device), its
// confirmation (Continue, or Abort to deny), the provider's development login (any name, any
// password: the name is the account) and its consent page.
//
// Clients (public: no secret; each its own policy, see POLICIES):
//   voice-device   codes live 600 s, access tokens an hour, refresh tokens a day; poll every 0.5 s
//                  (the least a device takes: each sign-in waits for a poll after the person approved)
//   brief-code     the same, but its codes live 2 s
//   brief-token    the same, but its access tokens live 2 s
//   hasty-device   the same as voice-device, but it answers slow_down to a poll sooner than 3 s
//                  after the last one of its device code (while announcing an interval of 0.5 s)
//   calendar-agent (secret "agent-secret") the agents' own client: it introspects the tokens sent to them
//
// oidc-provider leaves out the device authorization response's optional "interval" and never
// answers "slow_down" (RFC 8628 §3.2, §3.5); the two small middlewares of `pacing` do, by the
// client's policy: the interval announced, and the least time between two polls of one code.
// Access tokens are for the agents' resource (RESOURCE, scopes "calendar" and "mail"), opaque.
//
// Admin endpoints (plain JSON):
//   GET  /_admin/log     every request to the provider: {at, method, path, form, answer}, form the
//                        posted fields (values as sent) and answer the JSON error, if any, or the HTTP status
//   GET  /_admin/tokens  {"access": [{value, account, client}], "refresh": [...]}: every token issued
//   POST /_admin/revoke?account=NAME   revoke every grant of the account, and its tokens (the person
//                        took the device's access away on the provider's account page)
'use strict';

const http = require('node:http');
const { pathToFileURL } = require('node:url');

const RESOURCE = 'urn:ovos-a2a-tests:agents';
const BASE = { interval: 0.5, least: 0, codeTtl: 600, accessTtl: 3600, refreshTtl: 86400 };
const POLICIES = {
  'voice-device': BASE,
  'brief-code': { ...BASE, codeTtl: 2 },
  'brief-token': { ...BASE, accessTtl: 2 },
  'hasty-device': { ...BASE, least: 3 },
};
const policy = (clientId) => POLICIES[clientId] || BASE;
const DEVICE_GRANTS = ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'];

function option(name, fallback) {
  const at = process.argv.indexOf(name);
  return at >= 0 ? process.argv[at + 1] : fallback;
}

function sendJson(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

// What the provider is asked and answers, and the tokens it issues.
const log = [];
const issued = { access: [], refresh: [] };
const grants = new Map(); // grant id -> account

// The device authorization response gets the client's interval; a poll of a device code that
// is still pending, sooner than the client's least time after the code's last poll, gets
// slow_down instead of authorization_pending (its answer is rewritten after the provider's).
function pacing() {
  const lastPoll = new Map(); // device code -> ms
  return async function pace(ctx, next) {
    await next();
    const route = ctx.oidc && ctx.oidc.route;
    if (route === 'device_authorization' && ctx.status === 200 && ctx.body) {
      ctx.body = { ...ctx.body, interval: policy(ctx.oidc.client.clientId).interval };
    }
    if (route === 'token' && ctx.oidc.params && ctx.oidc.params.device_code) {
      const code = ctx.oidc.params.device_code;
      const now = Date.now();
      const last = lastPoll.get(code);
      lastPoll.set(code, now);
      const least = ctx.oidc.client ? policy(ctx.oidc.client.clientId).least : 0;
      if (ctx.body && ctx.body.error === 'authorization_pending' && last !== undefined && now - last < least * 1000) {
        ctx.body = { error: 'slow_down', error_description: 'polled sooner than the interval allows' };
      }
    }
  };
}

// Each request to the provider and its answer, for the tests to read (the form as the provider parsed it).
function recording() {
  return async function record(ctx, next) {
    const entry = { at: Date.now() / 1000, method: ctx.method, path: ctx.path, form: {}, answer: null,
      authorization: ctx.get('authorization') || '' };
    log.push(entry);
    try {
      await next();
    } finally {
      entry.form = (ctx.oidc && ctx.oidc.body) ? { ...ctx.oidc.body } : {};
      entry.answer = ctx.body && typeof ctx.body === 'object' && ctx.body.error ? ctx.body.error : ctx.status;
    }
  };
}

async function main() {
  const oidcProvider = require.resolve('oidc-provider');
  const { default: Provider } = await import(pathToFileURL(oidcProvider).href);

  const server = http.createServer();
  await new Promise((resolve) => server.listen(Number(option('--port', '0')), '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${server.address().port}`;

  const provider = new Provider(issuer, {
    clients: [
      ...Object.keys(POLICIES).map((clientId) => ({
        client_id: clientId, client_name: `the ${clientId} test device`, token_endpoint_auth_method: 'none',
        grant_types: DEVICE_GRANTS, response_types: [], redirect_uris: [],
      })),
      { client_id: 'calendar-agent', client_secret: 'agent-secret', grant_types: [], response_types: [], redirect_uris: [] },
    ],
    scopes: ['openid', 'offline_access'],
    features: {
      devInteractions: { enabled: true },
      deviceFlow: { enabled: true },
      revocation: { enabled: true },
      introspection: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: async () => RESOURCE,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (ctx, resource, client) => {
          if (resource !== RESOURCE) throw new Error(`unknown resource ${resource}`);
          return { scope: 'calendar mail', accessTokenFormat: 'opaque', accessTokenTTL: policy(client.clientId).accessTtl };
        },
      },
    },
    ttl: {
      DeviceCode: (ctx, token, client) => policy(client.clientId).codeTtl,
      RefreshToken: (ctx, token, client) => policy(client.clientId).refreshTtl,
    },
    issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
    findAccount: async (ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
    cookies: { keys: ['ovos-a2a-tests-only'] },
  });
  provider.on('access_token.saved', (token) => issued.access.push({ value: token.jti, account: token.accountId, client: token.clientId }));
  provider.on('refresh_token.saved', (token) => issued.refresh.push({ value: token.jti, account: token.accountId, client: token.clientId }));
  provider.on('grant.saved', (grant) => grants.set(grant.jti, grant.accountId));
  provider.use(recording());
  provider.use(pacing());

  const callback = provider.callback();
  server.on('request', async (req, res) => {
    const url = new URL(req.url, issuer);
    if (!url.pathname.startsWith('/_admin/')) return callback(req, res);
    try {
      if (req.method === 'GET' && url.pathname === '/_admin/log') return sendJson(res, 200, log);
      if (req.method === 'GET' && url.pathname === '/_admin/tokens') return sendJson(res, 200, issued);
      if (req.method === 'POST' && url.pathname === '/_admin/revoke') {
        const account = url.searchParams.get('account');
        let revoked = 0;
        for (const [grantId, owner] of grants) {
          if (owner !== account) continue;
          await provider.AccessToken.revokeByGrantId(grantId);
          await provider.RefreshToken.revokeByGrantId(grantId);
          const grant = await provider.Grant.find(grantId);
          if (grant) await grant.destroy();
          grants.delete(grantId);
          revoked += 1;
        }
        return sendJson(res, 200, { revoked });
      }
      return sendJson(res, 404, { error: 'no such admin endpoint' });
    } catch (err) {
      return sendJson(res, 500, { error: String(err && err.stack || err) });
    }
  });

  process.on('SIGTERM', () => server.close(() => process.exit(0)));
  process.on('SIGINT', () => server.close(() => process.exit(0)));
  process.stdout.write(`${JSON.stringify({ url: issuer, discovery: `${issuer}/.well-known/openid-configuration` })}\n`);
}

main().catch((err) => { process.stderr.write(`${err.stack || err}\n`); process.exit(1); });
