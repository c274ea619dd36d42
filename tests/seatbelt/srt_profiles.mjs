// srt's own macOS profile builder, run under node on Linux: reads cases (JSON lines on stdin: {"name", "cwd",
// "home", "config"}) and prints one JSON line per case, {"name", "profile"} or {"name", "error"}. srt picks
// its platform from process.platform, so it is made "darwin" before srt is loaded; the Seatbelt profile is
// string building, and the `sandbox-exec -p PROFILE` argument is taken out of the wrapped command srt returns.
// Its proxies listen on 127.0.0.1 (ports of their own); nothing else is started.
// usage: node srt_profiles.mjs SRT_PACKAGE_DIR < cases.jsonl
import * as readline from 'node:readline';

Object.defineProperty(process, 'platform', { value: 'darwin' });
const pkg = process.argv[2];
const { SandboxManager } = await import(`${pkg}/dist/index.js`);
const { loadConfigFromString } = await import(`${pkg}/dist/utils/config-loader.js`);

// The words of a command line as srt quotes it (utils/shell-quote.ts: bare words and '...' with '"'"').
function words(line) {
  const out = [];
  let word = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === ' ') {
      if (word !== null) out.push(word);
      word = null;
    } else if (c === "'") {
      const end = line.indexOf("'", i + 1);
      word = (word ?? '') + line.slice(i + 1, end);
      i = end;
    } else if (c === '"') {
      const end = line.indexOf('"', i + 1);
      word = (word ?? '') + line.slice(i + 1, end);
      i = end;
    } else {
      word = (word ?? '') + c;
    }
  }
  if (word !== null) out.push(word);
  return out;
}

const input = readline.createInterface({ input: process.stdin });
for await (const line of input) {
  if (!line.trim()) continue;
  const c = JSON.parse(line);
  try {
    process.env.HOME = c.home;
    process.chdir(c.cwd);
    const config = loadConfigFromString(JSON.stringify(c.config));
    if (!config) throw new Error('srt refuses the config');
    await SandboxManager.initialize(config);
    const wrapped = await SandboxManager.wrapWithSandbox('true');
    const argv = words(wrapped);
    const at = argv.indexOf('/usr/bin/sandbox-exec');
    if (at < 0 || argv[at + 1] !== '-p') throw new Error('no sandbox-exec -p in: ' + wrapped.slice(0, 200));
    process.stdout.write(JSON.stringify({ name: c.name, profile: argv[at + 2] }) + '\n');
  } catch (e) {
    process.stdout.write(JSON.stringify({ name: c.name, error: String(e && e.stack || e) }) + '\n');
  } finally {
    await SandboxManager.reset();
  }
}
process.exit(0);
