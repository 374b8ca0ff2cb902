// A real external authorization server for the suite: oidc-provider (pinned in
// package.json) on a loopback port, issuing JWT access tokens (RFC 9068) bound to
// a resource indicator (RFC 8707) through the client_credentials grant, which needs
// no person. Prints its issuer URL on the first line once it listens.
//
// Its key set holds an RSA 2048, a P-256 and an Ed25519 key made at start; which
// one signs depends on the client. Clients (all client_secret_post, secret
// IDP_SECRET):
//   hub-agent     RS256, 5-minute tokens, scopes hub:tools chat
//   hub-agent-es  ES256, the same
//   hub-agent-ed  EdDSA, the same
//   hub-short     RS256, tokens that live one second (for an expired token)
//   stranger      RS256, a client the hub maps to no principal
// Resources: HUB_RESOURCE (the hub's /mcp) and OTHER_RESOURCE (another API): a
// token's `aud` is the one asked for with `resource`.
// `POST /suite/rotate` rotates the RSA key, as an operator would: the provider is
// made again with a new RSA key (kid rsa-2) in place of the old one, so its
// tokens carry a kid the hub has not seen.
import http from "node:http";
import { generateKeyPairSync } from "node:crypto";
import Provider, { errors } from "oidc-provider";

const HUB_RESOURCE = process.env.HUB_RESOURCE;
const OTHER_RESOURCE = process.env.OTHER_RESOURCE;
const SECRET = process.env.IDP_SECRET;
if (!HUB_RESOURCE || !OTHER_RESOURCE || !SECRET) {
  throw new Error("HUB_RESOURCE, OTHER_RESOURCE and IDP_SECRET must be set");
}

function jwk(kid, alg, type, options) {
  const { privateKey } = generateKeyPairSync(type, options);
  return { ...privateKey.export({ format: "jwk" }), kid, alg, use: "sig" };
}
const rsa = (kid) => jwk(kid, "RS256", "rsa", { modulusLength: 2048 });
const others = [jwk("ec-1", "ES256", "ec", { namedCurve: "P-256" }), jwk("ed-1", "EdDSA", "ed25519")];

const algOf = { "hub-agent-es": "ES256", "hub-agent-ed": "EdDSA" };
const clients = ["hub-agent", "hub-agent-es", "hub-agent-ed", "hub-short", "stranger"].map((id) => ({
  client_id: id,
  client_secret: SECRET,
  grant_types: ["client_credentials"],
  redirect_uris: [],
  response_types: [],
  scope: "hub:tools chat",
  token_endpoint_auth_method: "client_secret_post",
}));

const server = http.createServer((req, res) => {
  if (req.method === "POST" && req.url === "/suite/rotate") {
    handler = provider(rsa("rsa-2")).callback();
    res.writeHead(200).end("rotated\n");
    return;
  }
  handler(req, res);
});
let handler = (_req, res) => res.writeHead(503).end();
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

/** The provider signing RS256 tokens with `rsaKey`. */
const provider = (rsaKey) => new Provider(issuer, {
  clients,
  jwks: { keys: [rsaKey, ...others] },
  scopes: ["hub:tools", "chat"],
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => undefined,
      getResourceServerInfo(_ctx, resource, client) {
        if (resource !== HUB_RESOURCE && resource !== OTHER_RESOURCE) {
          throw new errors.InvalidTarget();
        }
        return {
          audience: resource,
          scope: "hub:tools chat",
          accessTokenFormat: "jwt",
          accessTokenTTL: client.clientId === "hub-short" ? 1 : 300,
          jwt: { sign: { alg: algOf[client.clientId] ?? "RS256" } },
        };
      },
    },
  },
});
handler = provider(rsa("rsa-1")).callback();
console.log(issuer);
