// Starts the real wasmhub binary (`$WASMHUB_BIN`, default target/debug/wasmhub)
// with providers `up`, `once` and `local` pointing at a scripted upstream, on a free loopback port,
// in a temporary folder; stop() ends it (SIGTERM, as an operator would). Options:
// `plugins`, .wasm files copied into its plugins folder; `tokens`, {name: secret}
// client tokens allowed every operation; `stalling`, a fourth provider `slow` on
// the same upstream that gives up on a silent answer after 500 ms
// (`idle_timeout_ms`); `config`, more lines of wasmhub.toml (after the providers).
import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");

async function freePort() {
  const srv = net.createServer();
  await new Promise((resolve) => srv.listen(0, "127.0.0.1", resolve));
  const { port } = srv.address();
  await new Promise((resolve) => srv.close(resolve));
  return port;
}

export async function startHub(upstreamBaseUrl, { plugins = [], tokens = {}, stalling = false, config: more = [] } = {}) {
  const bin = path.resolve(root, process.env.WASMHUB_BIN ?? "target/debug/wasmhub");
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "wasmhub-node-"));
  fs.mkdirSync(path.join(dir, "plugins"));
  for (const file of plugins) fs.copyFileSync(file, path.join(dir, "plugins", path.basename(file)));
  const env = hubEnv();
  const tokenLines = Object.entries(tokens).flatMap(([name, secret]) => {
    const variable = `WASMHUB_TEST_TOKEN_${name.toUpperCase()}`;
    env[variable] = secret;
    return ["[[tokens]]", `name = ${JSON.stringify(name)}`, `secret_env = "${variable}"`, 'allow = ["*"]'];
  });
  const port = await freePort();
  const config = path.join(dir, "wasmhub.toml");
  fs.writeFileSync(
    config,
    [
      `listen = "127.0.0.1:${port}"`,
      `plugins_dir = ${JSON.stringify(path.join(dir, "plugins"))}`,
      `data_dir = ${JSON.stringify(path.join(dir, "data"))}`,
      "[[providers]]",
      'name = "up"',
      `base_url = ${JSON.stringify(upstreamBaseUrl)}`,
      'models = ["*"]',
      // The same upstream as a provider without retries (the first target of the
      // chain "fallback") and as a local server sending cumulative deltas.
      "[[providers]]",
      'name = "once"',
      `base_url = ${JSON.stringify(upstreamBaseUrl)}`,
      "max_retries = 0",
      "[[providers]]",
      'name = "local"',
      `base_url = ${JSON.stringify(upstreamBaseUrl)}`,
      'stream_deltas = "cumulative"',
      "[[models]]",
      'name = "fallback"',
      'targets = ["once/status:503", "once/fixture:openai--openai-text"]',
      ...(stalling
        ? ["[[providers]]", 'name = "slow"', `base_url = ${JSON.stringify(upstreamBaseUrl)}`, "idle_timeout_ms = 500", "max_retries = 0"]
        : []),
      ...tokenLines,
      ...more,
      "",
    ].join("\n"),
  );
  const child = spawn(bin, ["serve", "--config", config], { stdio: ["ignore", "ignore", "pipe"], env });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const exited = new Promise((resolve) => child.on("exit", resolve));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`wasmhub serve exited (${child.exitCode}):\n${stderr}`);
    try {
      if ((await fetch(`${url}/health`)).ok) break;
    } catch {}
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`wasmhub serve did not answer /health within 60 s:\n${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    stderr: () => stderr,
    stop: async () => {
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(timer);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The environment without OpenAI variables, so only the configured provider exists. */
function hubEnv() {
  const env = { ...process.env };
  delete env.OPENAI_API_KEY;
  delete env.OPENAI_BASE_URL;
  return env;
}
