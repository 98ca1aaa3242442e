// The embedded controller for the status page test: the options of a
// one-node controller group, and synthetic brokers that start as a 5.x
// broker in controller mode does (heartbeat, apply an id, register, elect),
// in raw frames on the controller's own port.
'use strict';

const net = require('node:net');
const path = require('node:path');

const { RawConn, closedPort } = require(path.join(__dirname, '..', 'compat', 'lib', 'wire.js'));

const RAFT_PORT_OFFSET = 1000; // the default controllerRaftPortOffset

const CODE = { BROKER_HEARTBEAT: 904, ELECT_MASTER: 1002, REGISTER_BROKER: 1003, APPLY_BROKER_ID: 1013 };

function bindable(port) {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

// A free loopback port for the controller whose Raft port is free too.
async function controllerPort() {
  for (let i = 0; i < 100; i++) {
    const port = await closedPort();
    if (port + RAFT_PORT_OFFSET <= 65535 && await bindable(port + RAFT_PORT_OFFSET)) return port;
  }
  throw new Error('no free controller port pair in 100 tries');
}

// The options of node n0, alone in controller group `group`, on `port`.
function oneNodeGroup(group, port) {
  return ['--enableControllerInNamesrv=true', `--controllerDLegerGroup=${group}`,
    `--controllerDLegerPeers=n0-127.0.0.1:${port}`, '--controllerDLegerSelfId=n0'];
}

// A request answered with code 0, else an error naming the answer.
async function call(conn, code, ext) {
  const answer = await conn.request({ code, ext });
  if (!answer.header || answer.header.code !== 0) {
    throw new Error(`controller request ${code} answered ${answer.headerBytes.toString()}`);
  }
  return answer;
}

// b: { cluster, brokerName, brokerId, address, timeoutMillis }. Sent
// two-way (a broker sends it one-way) so that it is known to have landed.
function heartbeat(conn, b, epoch, maxOffset) {
  return call(conn, CODE.BROKER_HEARTBEAT, {
    clusterName: b.cluster, brokerName: b.brokerName, brokerAddr: b.address, brokerId: String(b.brokerId),
    epoch: String(epoch), maxOffset: String(maxOffset), confirmOffset: '0',
    heartbeatTimeoutMills: String(b.timeoutMillis),
  });
}

// A broker's start up to its registration: one heartbeat (epoch -1, as from
// an empty epoch file), its id applied, registered. Resolves to the open
// connection: closing it ends the broker's liveness on the controller.
async function startBroker(port, b) {
  const conn = await RawConn.connect(port);
  try {
    await heartbeat(conn, b, -1, 0);
    await call(conn, CODE.APPLY_BROKER_ID, {
      clusterName: b.cluster, brokerName: b.brokerName, appliedBrokerId: String(b.brokerId),
      registerCheckCode: `${b.address};${Date.now()}`,
    });
    await call(conn, CODE.REGISTER_BROKER, {
      clusterName: b.cluster, brokerName: b.brokerName, brokerId: String(b.brokerId), brokerAddress: b.address,
    });
  } catch (e) {
    conn.close();
    throw e;
  }
  return conn;
}

// The broker asks to be elected (as one with no master after registering
// does); resolves to the answer's ext fields (masterBrokerId, masterEpoch, ...).
async function electSelf(conn, b) {
  const answer = await call(conn, CODE.ELECT_MASTER, {
    clusterName: b.cluster, brokerName: b.brokerName, brokerId: String(b.brokerId), designateElect: 'false',
  });
  return answer.header.extFields || {};
}

module.exports = { controllerPort, oneNodeGroup, heartbeat, startBroker, electSelf };
