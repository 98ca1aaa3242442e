// Builds the clients under test (ali-ons 3.x and its older fork `rocketmq`
// 2.x) pointed at one NameServer address, with no HTTP address lookup and a
// logger that keeps what the client says for failure messages.
'use strict';

const RemotingCommand = {
  'ali-ons': require('ali-ons/lib/protocol/command/remoting_command'),
  rocketmq: require('rocketmq/lib/protocol/command/remoting_command'),
};
const MQClientAPI = {
  'ali-ons': require('ali-ons/lib/mq_client_api'),
  rocketmq: require('rocketmq/lib/mq_client_api'),
};

// The clients only use HTTP to look up NameServer addresses when none is
// given; any use here is a test failure.
const noHttp = {
  request() { throw new Error('the client tried an HTTP address lookup'); },
};

function recordingLogger() {
  const lines = [];
  const rec = level => (...args) => { lines.push(`${level} ${args.map(String).join(' ')}`); };
  return { lines, info: rec('info'), warn: rec('warn'), error: rec('error'), debug() {} };
}

// The two packages differ in style (async methods in ali-ons, co generator
// methods in the fork) and in how they are given addresses; this wraps one
// client's admin API object (MQClientAPI) for one NameServer behind the same
// promise-returning calls: invoke, route, close.
const co = require(require.resolve('co', { paths: [require.resolve('rocketmq')] }));

async function clientApi(pkg, nameSrv, options = {}) {
  const logger = recordingLogger();
  const common = { httpclient: noHttp, logger, responseTimeout: 5000, ...options };
  const addrOptions = pkg === 'ali-ons'
    ? { nameSrv }
    // the fork insists on an address-server URL even when given the list;
    // with namesrvAddr set it never fetches it (noHttp would throw)
    : { namesrvAddr: nameSrv, onsAddr: 'unused-address-server' };
  const api = new MQClientAPI[pkg]({ ...common, ...addrOptions });
  api.on('error', err => logger.error('emitted', err && err.stack));
  await api.ready();
  const run = (name, ...args) => (pkg === 'ali-ons' ? api[name](...args) : co(api[name](...args)));
  return {
    pkg,
    api,
    logger,
    RemotingCommand: RemotingCommand[pkg],
    // one request to the NameServer, the client's answer object back
    invoke: (cmd, timeout) => run('invoke', null, cmd, timeout),
    // the client's own route query and parser
    route: (topic, timeout) => run('getTopicRouteInfoFromNameServer', topic, timeout),
    close: () => run('close'),
  };
}

// A promise that rejects after ms, to bound anything a client does.
function within(ms, promise, what) {
  let timer;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not finish in ${ms} ms`)), ms);
    }),
  ]);
}

module.exports = { clientApi, recordingLogger, noHttp, within, RemotingCommand, MQClientAPI };
