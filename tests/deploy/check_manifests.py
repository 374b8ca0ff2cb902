"""Checks that deploy/'s Kubernetes manifests fit together and fit the hub: what the
schema validation (kubernetes-validate) cannot see.

  - the ConfigMap's wasmhub.toml parses, stores on PostgreSQL, and every environment
    variable it names (storage.url_env, tokens' secret_env, providers' api_key_env)
    is set in the container, from a Secret that secrets.yaml defines with that key;
  - the container serves that file (--config inside the ConfigMap's mount) with
    --locked; plugins_dir is a read-only mount, data_dir a per-pod emptyDir;
  - the readiness probe GETs /health?ready and the liveness probe /health on the port the hub listens on, with a
    Host the hub accepts; the Service targets that port; more than one replica.

`check_manifests.py DEPLOY_DIR OUT_TOML` writes the ConfigMap's TOML to OUT_TOML (for
run.sh's boot check) and prints one `ok`/`not ok` line per check.
"""

import sys
import tomllib
from pathlib import Path

import yaml

deploy, out = Path(sys.argv[1]), Path(sys.argv[2])
docs = [d for f in sorted(deploy.glob("*.yaml")) for d in yaml.safe_load_all(f.read_text()) if d]
by_kind = {}
for d in docs:
    by_kind.setdefault(d["kind"], []).append(d)

failed = 0


def check(name, ok, detail=""):
    global failed
    print(f"{'ok' if ok else 'not ok'} - deploy: {name}{'' if ok else ': ' + str(detail)}", flush=True)
    failed += 0 if ok else 1


config_map = next(d for d in by_kind["ConfigMap"] if d["metadata"]["name"] == "wasmhub-config")
toml_text = config_map["data"]["wasmhub.toml"]
out.write_text(toml_text)
config = tomllib.loads(toml_text)
deployment = by_kind["Deployment"][0]
pod = deployment["spec"]["template"]["spec"]
container = pod["containers"][0]
secrets = {s["metadata"]["name"]: s.get("stringData", {}) | s.get("data", {}) for s in by_kind["Secret"]}
env = {e["name"]: e for e in container.get("env", [])}

check("the ConfigMap's TOML stores on PostgreSQL", config.get("storage", {}).get("backend") == "postgres", config.get("storage"))

named = [config.get("storage", {}).get("url_env", "DATABASE_URL")]
named += [t["secret_env"] for t in config.get("tokens", []) if "secret_env" in t]
named += [p["api_key_env"] for p in config.get("providers", []) if "api_key_env" in p]
for var in named:
    ref = env.get(var, {}).get("valueFrom", {}).get("secretKeyRef")
    check(
        f"{var} comes from a Secret that defines it",
        ref is not None and ref["key"] in secrets.get(ref["name"], {}),
        f"env {env.get(var)}; secrets {sorted((n, sorted(k)) for n, k in secrets.items())}",
    )

mounts = {m["name"]: m for m in container.get("volumeMounts", [])}
volumes = {v["name"]: v for v in pod.get("volumes", [])}


def mount_of(path):
    """The (mount, volume) whose mountPath is `path` or holds it."""
    for name, m in mounts.items():
        if path == m["mountPath"] or path.startswith(m["mountPath"].rstrip("/") + "/"):
            return m, volumes.get(name, {})
    return None, {}


args = container.get("args", [])
config_path = args[args.index("--config") + 1] if "--config" in args else ""
m, v = mount_of(config_path)
check(
    "the container serves the ConfigMap's file",
    args[:1] == ["serve"]
    and v.get("configMap", {}).get("name") == "wasmhub-config"
    and Path(config_path).name in config_map["data"],
    f"args {args}; mount {m}; volume {v}",
)
check("plugins are served --locked", "--locked" in args, args)
m, v = mount_of(config["plugins_dir"])
check("plugins_dir is a read-only volume shared by the replicas", m is not None and m.get("readOnly") and "persistentVolumeClaim" in v, (m, v))
m, v = mount_of(config["data_dir"])
check("data_dir (the compiled cache) is each pod's own", m is not None and "emptyDir" in v, (m, v))

port = int(config["listen"].rsplit(":", 1)[1])
ports = {p["name"]: p["containerPort"] for p in container["ports"]}
check("the container port is the one the hub listens on", port in ports.values(), (config["listen"], ports))
for probe, path in (("readinessProbe", "/health?ready"), ("livenessProbe", "/health")):
    get = container.get(probe, {}).get("httpGet", {})
    target = ports.get(get.get("port"), get.get("port"))
    hosts = [h["value"] for h in get.get("httpHeaders", []) if h["name"].lower() == "host"]
    check(
        f"{probe} is GET {path} on the hub's port with an accepted Host",
        get.get("path") == path and target == port and hosts in (["localhost"], ["127.0.0.1"]),
        get,
    )
service = next(s for s in by_kind["Service"] if s["metadata"]["name"] == "wasmhub")
targets = [p["targetPort"] for p in service["spec"]["ports"]]
check("the Service targets the hub's port", all(ports.get(t, t) == port for t in targets), targets)
check(
    "the Service selects the Deployment's pods",
    service["spec"]["selector"].items() <= deployment["spec"]["template"]["metadata"]["labels"].items(),
    service["spec"]["selector"],
)
svc, ns = service["metadata"]["name"], service["metadata"]["namespace"]
allowed = config.get("server", {}).get("allowed_hosts", [])
check(
    "the Service's DNS names are Hosts the hub accepts",
    {svc, f"{svc}.{ns}.svc", f"{svc}.{ns}.svc.cluster.local"} <= set(allowed),
    allowed,
)
check("more than one replica", deployment["spec"]["replicas"] > 1, deployment["spec"]["replicas"])
namespaces = {d["metadata"].get("namespace") for d in docs if d["kind"] != "Namespace"}
check("every resource is in the wasmhub namespace", namespaces == {"wasmhub"}, namespaces)

sys.exit(1 if failed else 0)
