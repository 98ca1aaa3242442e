// Starts the rmqns binary under test on a free loopback port with HOME in a
// fresh temporary directory, and stops it again by its PID. The binary comes
// from $RMQNS_BIN (run.sh sets it).
'use strict';

const assert = require('node:assert');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');

const BOOT_TIMEOUT_MS = 15000;
const STOP_TIMEOUT_MS = 5000;
const BOOT_LINE = /The Name Server boot success\. serializeType=JSON, address 127\.0\.0\.1:(\d+)/;

// Every server started by this process, so that none outlives it.
const running = new Set();
process.on('exit', () => {
  for (const child of running) {
    try { process.kill(child.pid, 'SIGKILL'); } catch (e) { /* already gone */ }
  }
});

function binary() {
  const bin = process.env.RMQNS_BIN;
  assert.ok(bin, 'RMQNS_BIN must name the rmqns binary');
  assert.ok(fs.existsSync(bin), `RMQNS_BIN ${bin} does not exist`);
  return bin;
}

// Starts a server; extra is a list of `--KEY=VALUE` arguments. Resolves to
// { pid, port, addr, home, log(), kvFile, stop(), kill() }.
async function startServer(extra = []) {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'rmqns-compat-'));
  const logPath = path.join(home, 'rmqns.log');
  const logFd = fs.openSync(logPath, 'w');
  const child = spawn(binary(),
    ['--listenPort=0', '--bindAddress=127.0.0.1', ...extra],
    {
      cwd: home,
      env: { ...process.env, HOME: home, ROCKETMQ_HOME: home },
      stdio: ['ignore', 'pipe', logFd],
    });
  fs.closeSync(logFd);
  running.add(child);
  const exited = new Promise(resolve => child.once('exit', (code, signal) => {
    running.delete(child);
    resolve({ code, signal });
  }));

  let out = '';
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`rmqns did not boot in ${BOOT_TIMEOUT_MS} ms; stdout: ${out}; log: ${readLog()}`));
    }, BOOT_TIMEOUT_MS);
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', chunk => {
      out += chunk;
      const m = BOOT_LINE.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    exited.then(st => {
      clearTimeout(timer);
      reject(new Error(`rmqns exited before booting (${JSON.stringify(st)}); log: ${readLog()}`));
    });
  }).catch(err => {
    try { process.kill(child.pid, 'SIGKILL'); } catch (e) { /* gone */ }
    fs.rmSync(home, { recursive: true, force: true });
    throw err;
  });

  function readLog() {
    try { return fs.readFileSync(logPath, 'utf8'); } catch (e) { return ''; }
  }

  let stopped = null;
  // SIGTERM, then SIGKILL after STOP_TIMEOUT_MS. Resolves to the exit status;
  // the temporary directory is removed unless RMQNS_KEEP_TEST_DIR is set.
  function stop() {
    if (stopped) return stopped;
    stopped = (async () => {
      if (child.exitCode === null && child.signalCode === null) {
        process.kill(child.pid, 'SIGTERM');
      }
      let timer;
      const st = await Promise.race([
        exited,
        new Promise(resolve => {
          timer = setTimeout(() => {
            try { process.kill(child.pid, 'SIGKILL'); } catch (e) { /* gone */ }
            resolve(null);
          }, STOP_TIMEOUT_MS);
        }),
      ]);
      clearTimeout(timer);
      const final = st || await exited;
      const log = readLog();
      if (!process.env.RMQNS_KEEP_TEST_DIR) {
        fs.rmSync(home, { recursive: true, force: true });
      }
      return { ...final, killed: st === null, log };
    })();
    return stopped;
  }

  // Kills the server at once (SIGKILL by its PID: a crash, not a shutdown)
  // and resolves to its exit status once it is gone; the temporary
  // directory is removed as by stop(), which then returns the same status.
  function kill() {
    if (stopped) return stopped;
    stopped = (async () => {
      if (child.exitCode === null && child.signalCode === null) {
        process.kill(child.pid, 'SIGKILL');
      }
      const final = await exited;
      const log = readLog();
      if (!process.env.RMQNS_KEEP_TEST_DIR) {
        fs.rmSync(home, { recursive: true, force: true });
      }
      return { ...final, killed: true, log };
    })();
    return stopped;
  }

  return {
    pid: child.pid,
    port,
    addr: `127.0.0.1:${port}`,
    home,
    kvFile: path.join(home, 'namesrv', 'kvConfig.json'),
    log: readLog,
    stop,
    kill,
  };
}

// Asserts a clean stop: exit 0 after SIGTERM, no sanitizer report.
async function stopServer(server) {
  if (!server) return;
  const st = await server.stop();
  assert.ok(!st.killed, `rmqns had to be killed; log:\n${st.log}`);
  assert.strictEqual(st.code, 0, `rmqns exit ${JSON.stringify(st)}; log:\n${st.log}`);
  assert.ok(!/(AddressSanitizer|UndefinedBehaviorSanitizer|ThreadSanitizer|LeakSanitizer|runtime error:)/.test(st.log),
    `sanitizer report in the log:\n${st.log}`);
}

module.exports = { startServer, stopServer };
