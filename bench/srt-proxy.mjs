// srt's egress proxy, standalone: the same HTTP+SOCKS mux proxy `srt <cmd>` starts for its sandbox (started through
// srt's own library entry, SandboxManager.initialize, with a network policy allowing the loopback upstream), but with
// no sandboxed command. srt's `srt proxy` subcommand is a different, decider-driven mode that refuses opaque CONNECT
// tunnels, so it cannot carry the CONNECT benchmarks.
// Usage: node srt-proxy.mjs PACKAGE_DIR   -> prints "PORT TOKEN" on one line, then serves until SIGTERM/SIGINT.
// Clients authenticate with Proxy-Authorization: Basic base64("srt:" + TOKEN), as srt's sandboxed commands do.
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const pkgDir = process.argv[2];
if (!pkgDir) {
  console.error('usage: node srt-proxy.mjs PACKAGE_DIR');
  process.exit(2);
}
const { SandboxManager } = await import(pathToFileURL(path.join(pkgDir, 'dist', 'index.js')).href);
await SandboxManager.initialize({
  network: { allowedDomains: ['localhost', '127.0.0.1'], deniedDomains: [] },
  filesystem: { denyRead: [], allowWrite: [], denyWrite: [] },
});
await SandboxManager.waitForNetworkInitialization();
const port = SandboxManager.getProxyPort();
const token = SandboxManager.getProxyAuthToken();
process.stdout.write(`${port} ${token}\n`);
// The library unrefs its servers (it expects a sandboxed child to keep the process alive): keep it alive ourselves.
const keep = setInterval(() => {}, 1 << 30);
const stop = async () => {
  clearInterval(keep);
  await SandboxManager.reset();
  process.exit(0);
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
