"""A registry token server for the OCI suite: the Docker token protocol the real
registry's `auth: token` delegates to. It makes an EC P-256 key and a self-signed
certificate (written to CERT, the registry's rootcertbundle), then answers
`GET /token?service=…&scope=repository:NAME:ACTIONS` for the user USER with the
password PASSWORD (HTTP Basic) with an ES256 JWT granting that scope, its
certificate in the `x5c` header. Anyone else gets 401.

Usage: token_server.py PORT CERT ISSUER SERVICE USER PASSWORD"""

import base64
import datetime
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.x509.oid import NameOID

PORT, CERT, ISSUER, SERVICE, USER, PASSWORD = sys.argv[1:7]

key = ec.generate_private_key(ec.SECP256R1())
name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "wasmhub test token issuer")])
now = datetime.datetime.now(datetime.timezone.utc)
cert = (
    x509.CertificateBuilder()
    .subject_name(name)
    .issuer_name(name)
    .public_key(key.public_key())
    .serial_number(x509.random_serial_number())
    .not_valid_before(now - datetime.timedelta(minutes=5))
    .not_valid_after(now + datetime.timedelta(days=1))
    .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
    .sign(key, hashes.SHA256())
)
with open(CERT + ".tmp", "wb") as f:
    f.write(cert.public_bytes(serialization.Encoding.PEM))
os.rename(CERT + ".tmp", CERT)
X5C = base64.b64encode(cert.public_bytes(serialization.Encoding.DER)).decode()


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt(scope):
    access = []
    if scope:
        kind, repo, actions = scope.split(":")
        access = [{"type": kind, "name": repo, "actions": actions.split(",")}]
    t = int(time.time())
    header = {"alg": "ES256", "typ": "JWT", "x5c": [X5C]}
    claims = {"iss": ISSUER, "sub": USER, "aud": SERVICE, "exp": t + 300, "nbf": t - 10, "iat": t,
              "jti": base64.b16encode(os.urandom(8)).decode(), "access": access}
    signing_input = f"{b64url(json.dumps(header).encode())}.{b64url(json.dumps(claims).encode())}"
    r, s = decode_dss_signature(key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
    return f"{signing_input}.{b64url(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        url = urlparse(self.path)
        query = parse_qs(url.query)
        expected = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
        if url.path != "/token" or self.headers.get("Authorization") != expected \
                or query.get("service") != [SERVICE]:
            self.send_response(401)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = json.dumps({"token": jwt(query.get("scope", [""])[0])}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", int(PORT)), Handler).serve_forever()
