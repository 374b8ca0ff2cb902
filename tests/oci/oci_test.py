"""The OCI suite's driver (run by run.sh): a real registry at $REGISTRY, the oras-py
reference client, and the wasmhub binary at $WASMHUB_BIN. Prints one `ok - ` or
`not ok - ` line per check and `oci: N passed, M failed`; exits 1 on any failure.
Every hub it starts is recorded in $WORK/pids (run.sh's trap stops them)."""

import base64
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import oras.client

REGISTRY = os.environ["REGISTRY"]
AUTH_REGISTRY = os.environ["AUTH_REGISTRY"]
BIN = os.environ["WASMHUB_BIN"]
PLUGINS = os.environ["PLUGINS"]
WORK = os.environ["WORK"]
TEXT = os.path.join(PLUGINS, "text.wasm")
CALC = os.path.join(PLUGINS, "calc.wasm")
WASM_CONFIG = "application/vnd.wasm.config.v0+json"

results = {"passed": 0, "failed": 0}


def check(name, ok, detail=""):
    key = "passed" if ok else "failed"
    results[key] += 1
    print(("ok - " if ok else "not ok - ") + name)
    if not ok and detail:
        print("    " + str(detail).replace("\n", "\n    ")[:3000])


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def wasmhub(*args, env=None):
    full = dict(os.environ, **(env or {}))
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=120, env=full)


def oras_client():
    return oras.client.OrasClient(hostname=REGISTRY, insecure=True)


def oras_push(wasm, repo_tag):
    """Pushes a component the standard way; returns the manifest digest."""
    workdir = os.path.join(WORK, "oras-push")
    os.makedirs(workdir, exist_ok=True)
    name = os.path.basename(wasm)
    with open(wasm, "rb") as src, open(os.path.join(workdir, name), "wb") as dst:
        dst.write(src.read())
    with open(os.path.join(workdir, "config.json"), "w") as f:
        json.dump({"architecture": "wasm", "os": "wasip2"}, f)
    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        r = oras_client().push(
            target=f"{REGISTRY}/{repo_tag}",
            files=[f"{name}:application/wasm"],
            manifest_config=f"config.json:{WASM_CONFIG}",
            quiet=True,
        )
    finally:
        os.chdir(cwd)
    return r.headers["Docker-Content-Digest"]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


class Hub:
    def __init__(self, config, *flags):
        self.port = free_port()
        self.log = os.path.join(WORK, f"hub-{self.port}.log")
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(
                [BIN, "serve", "--config", config, "--listen", f"127.0.0.1:{self.port}", *flags],
                stdout=log, stderr=subprocess.STDOUT)
        with open(os.path.join(WORK, "pids"), "a") as f:
            f.write(f"{self.proc.pid}\n")
        deadline = time.time() + 120
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the hub exited: {self.logs()}")
            try:
                health = self.get("/health")
                if health.get("status") == "ok":
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"the hub did not become ready: {self.logs()}")

    def logs(self):
        with open(self.log) as f:
            return f.read()

    def get(self, path):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=30) as r:
            return json.load(r)

    def slug(self, text):
        """text.slugify's slug of `text` (None when the call failed)."""
        body = json.dumps({"calls": [{"tool": "text.slugify", "input": {"text": text}}]}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/api/hub/call", data=body,
                                     headers={"content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as r:
            result = json.load(r)["results"][0]
        return result["result"]["slug"] if result["ok"] else None

    def plugin(self, name):
        return next((p for p in self.get("/api/plugins")["plugins"] if p["name"] == name), {})

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


def lock_text(folder):
    with open(os.path.join(folder, "plugins.lock")) as f:
        return f.read()


def pull_by_tag_and_digest():
    manifest = oras_push(TEXT, "plugins/text:1.0")
    by_tag = os.path.join(WORK, "by-tag")
    r = wasmhub("plugin", "pull", f"oci://{REGISTRY}/plugins/text:1.0", "--dir", by_tag)
    check("plugin pull by tag of what oras pushed", r.returncode == 0, r.stderr + r.stdout)
    pulled = os.path.join(by_tag, "text.wasm")
    check("the pulled component has the pushed bytes",
          os.path.exists(pulled) and sha256(pulled) == sha256(TEXT))
    lock = lock_text(by_tag) if os.path.exists(os.path.join(by_tag, "plugins.lock")) else ""
    check("plugins.lock pins the digest and the source",
          f"{sha256(TEXT)}  text.wasm" in lock
          and f"#@source text.wasm oci://{REGISTRY}/plugins/text:1.0 {manifest}" in lock, lock)
    sums = subprocess.run(["sha256sum", "-c", "plugins.lock"], cwd=by_tag, capture_output=True, text=True)
    check("sha256sum -c still reads plugins.lock", sums.returncode == 0, sums.stdout + sums.stderr)

    by_digest = os.path.join(WORK, "by-digest")
    r = wasmhub("plugin", "pull", f"oci://{REGISTRY}/plugins/text@{manifest}", "--dir", by_digest)
    pulled = os.path.join(by_digest, "text.wasm")
    check("plugin pull by digest", r.returncode == 0 and sha256(pulled) == sha256(TEXT), r.stderr)
    return manifest


def serve_locked_then_move_the_tag(manifest):
    folder = os.path.join(WORK, "served")
    r = wasmhub("plugin", "pull", f"oci://{REGISTRY}/plugins/text:1.0", "--dir", folder)
    check("pull into the served folder", r.returncode == 0, r.stderr)
    config = write(os.path.join(WORK, "served.toml"), f"""
plugins_dir = "{folder}"
data_dir = "{WORK}/data-served"
[[plugins.sources]]
ref = "oci://{REGISTRY}/plugins/text:1.0"
""")
    hub = Hub(config, "--locked")
    try:
        slug = hub.slug("Pulled from a Registry")
        check("serve --locked runs the pulled plugin (text.slugify)", slug == "pulled-from-a-registry", slug)
        text = hub.plugin("text")
        check("GET /api/plugins: text active with the pulled digest",
              text.get("state") == "active" and text.get("digest") == sha256(TEXT), text)
    finally:
        hub.stop()

    moved = oras_push(CALC, "plugins/text:1.0")
    r = wasmhub("plugin", "sync", "--config", config, "--locked")
    check("plugin sync --locked refuses the moved tag, naming both digests",
          r.returncode == 1 and manifest in r.stderr and moved in r.stderr and "moved" in r.stderr,
          r.stdout + r.stderr)
    r = wasmhub("plugin", "pull", f"oci://{REGISTRY}/plugins/text:1.0", "--dir", folder, "--locked")
    check("plugin pull --locked refuses it too", r.returncode == 1 and moved in r.stderr, r.stderr)
    check("the pinned file is untouched", sha256(os.path.join(folder, "text.wasm")) == sha256(TEXT))

    hub = Hub(config, "--locked")
    try:
        logs = hub.logs()
        check("serve --locked logs the refusal with both digests",
              manifest in logs and moved in logs, logs)
        slug = hub.slug("Still Pinned")
        check("and keeps serving the pinned version", slug == "still-pinned", slug)
    finally:
        hub.stop()

    r = wasmhub("plugin", "sync", "--config", config)
    check("plugin sync without --locked accepts the new tag",
          r.returncode == 0 and sha256(os.path.join(folder, "text.wasm")) == sha256(CALC)
          and moved in lock_text(folder), r.stdout + r.stderr)


def push_is_read_by_oras():
    src = os.path.join(WORK, "author")
    os.makedirs(src)
    wasm = os.path.join(src, "text.wasm")
    with open(TEXT, "rb") as a, open(wasm, "wb") as b:
        b.write(a.read())
    write(os.path.join(src, "text.toml"), "[limits]\nmemory_mb = 32\n")
    r = wasmhub("plugin", "push", wasm, f"oci://{REGISTRY}/authors/text:0.1")
    check("plugin push", r.returncode == 0, r.stderr)
    client = oras_client()
    manifest = client.get_manifest(f"{REGISTRY}/authors/text:0.1")
    check("the pushed manifest is the Wasm artifact layout",
          manifest["config"]["mediaType"] == WASM_CONFIG
          and manifest["layers"][0]["mediaType"] == "application/wasm", manifest)
    out = os.path.join(WORK, "oras-pulled")
    files = client.pull(target=f"{REGISTRY}/authors/text:0.1", outdir=out)
    got = os.path.join(out, "text.wasm")
    check("oras pulls what plugin push wrote, bytes equal",
          got in files and sha256(got) == sha256(TEXT), files)


def signed_pulls():
    key = os.path.join(WORK, "signing.key")
    r = wasmhub("plugin", "keygen", "--out", key)
    check("plugin keygen", r.returncode == 0 and os.stat(key).st_mode & 0o777 == 0o600, r.stderr)
    with open(key + ".pub") as f:
        public = f.read().strip()
    other = os.path.join(WORK, "other.key")
    wasmhub("plugin", "keygen", "--out", other)
    with open(other + ".pub") as f:
        other_public = f.read().strip()
    src = os.path.join(WORK, "signed-src")
    os.makedirs(src)
    wasm = os.path.join(src, "text.wasm")
    with open(TEXT, "rb") as a, open(wasm, "wb") as b:
        b.write(a.read())
    r = wasmhub("plugin", "sign", wasm, "--key", key)
    check("plugin sign writes text.wasm.sig", r.returncode == 0 and os.path.exists(wasm + ".sig"), r.stderr)
    r = wasmhub("plugin", "push", wasm, f"oci://{REGISTRY}/signed/text:1.0")
    check("plugin push sends the signature along", r.returncode == 0 and "sha256-" in r.stdout, r.stdout + r.stderr)

    def trusting(name, keys):
        return write(os.path.join(WORK, f"{name}.toml"),
                     f'[trust]\nkeys = {json.dumps(keys)}\nrequire_signed = true\n')

    good = trusting("trust-good", [public])
    folder = os.path.join(WORK, "signed")
    r = wasmhub("plugin", "pull", f"oci://{REGISTRY}/signed/text:1.0", "--dir", folder, "--config", good)
    check("a signed pull under require_signed",
          r.returncode == 0 and "verified" in r.stdout and os.path.exists(os.path.join(folder, "text.wasm.sig")),
          r.stdout + r.stderr)
    r = wasmhub("plugin", "inspect", os.path.join(folder, "text.wasm"), "--config", good)
    check("plugin inspect shows source and verified signer",
          f"source:  oci://{REGISTRY}/signed/text:1.0" in r.stdout and "(verified by [trust])" in r.stdout,
          r.stdout + r.stderr)

    empty = os.path.join(WORK, "refused")
    r = wasmhub("plugin", "pull", f"oci://{REGISTRY}/plugins/text:1.0", "--dir", empty, "--config", good)
    check("an unsigned artifact is refused at pull, nothing written",
          r.returncode == 1 and "unsigned" in r.stderr and not os.path.exists(os.path.join(empty, "text.wasm")),
          r.stderr)
    wrong = trusting("trust-wrong", [other_public])
    r = wasmhub("plugin", "pull", f"oci://{REGISTRY}/signed/text:1.0", "--dir", empty, "--config", wrong)
    check("a signature by an untrusted key is refused at pull",
          r.returncode == 1 and "not in [trust] keys" in r.stderr, r.stderr)

    config = write(os.path.join(WORK, "signed-serve.toml"), f"""
plugins_dir = "{folder}"
data_dir = "{WORK}/data-signed"
[trust]
keys = ["{public}"]
require_signed = true
""")
    hub = Hub(config)
    try:
        slug = hub.slug("Signed Plugin")
        check("serve with require_signed runs the signed pulled plugin", slug == "signed-plugin", slug)
    finally:
        hub.stop()


def token_auth():
    """The registry behind `auth: token`: 401 Bearer, then the token server."""
    no_config = os.path.join(WORK, "docker-none")
    os.makedirs(no_config)
    anonymous = {"DOCKER_CONFIG": no_config}
    from_env = dict(anonymous, WASMHUB_REGISTRY_USERNAME="ci", WASMHUB_REGISTRY_PASSWORD="ci-secret")
    ref = f"oci://{AUTH_REGISTRY}/private/text:1.0"
    r = wasmhub("plugin", "push", TEXT, ref, env=anonymous)
    check("a push without credentials is refused, saying where credentials come from",
          r.returncode == 1 and "refused access" in r.stderr and "WASMHUB_REGISTRY_USERNAME" in r.stderr, r.stderr)
    r = wasmhub("plugin", "push", TEXT, ref, env=from_env)
    check("plugin push through the bearer token flow (credentials from the environment)",
          r.returncode == 0, r.stdout + r.stderr)

    docker = os.path.join(WORK, "docker")
    os.makedirs(docker)
    auth = base64.b64encode(b"ci:ci-secret").decode()
    write(os.path.join(docker, "config.json"), json.dumps({"auths": {AUTH_REGISTRY: {"auth": auth}}}))
    folder = os.path.join(WORK, "private")
    r = wasmhub("plugin", "pull", ref, "--dir", folder, env={"DOCKER_CONFIG": docker})
    pulled = os.path.join(folder, "text.wasm")
    check("plugin pull through the token flow (credentials from a Docker config file)",
          r.returncode == 0 and sha256(pulled) == sha256(TEXT), r.stdout + r.stderr)
    wrong = dict(anonymous, WASMHUB_REGISTRY_USERNAME="ci", WASMHUB_REGISTRY_PASSWORD="wrong")
    r = wasmhub("plugin", "pull", ref, "--dir", os.path.join(WORK, "wrong"), env=wrong)
    check("a wrong password is refused", r.returncode == 1 and "refused access" in r.stderr, r.stderr)


def main():
    manifest = None
    try:
        manifest = pull_by_tag_and_digest()
    except Exception as e:  # a broken step is a failure, and the rest still runs
        check("pull by tag and digest ran", False, repr(e))
    steps = [("serve, then move the tag", lambda: serve_locked_then_move_the_tag(manifest)),
             ("push read by oras", push_is_read_by_oras), ("signed pulls", signed_pulls), ("token auth", token_auth)]
    for name, step in steps:
        try:
            step()
        except Exception as e:
            check(f"{name} ran to the end", False, repr(e))
    print(f"oci: {results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)


if __name__ == "__main__":
    # SIGTERM (run.sh's cleanup, timeout) unwinds like an error: every hub is stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    main()
