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
    // any other method of the client's API object
    call: (name, ...args) => run(name, ...args),
  };
}

const PACKAGE = { 'ali-ons': require('ali-ons'), rocketmq: require('rocketmq') };

// Starts a producer of the package. The client's periodic tasks (route
// refresh, broker heartbeats) run every second so that they stop soon after
// close(). Returns { producer, logger, errors, send(topic), publishInfo(topic),
// close() }.
async function startProducer(pkg, nameSrv, options = {}) {
  const logger = recordingLogger();
  const errors = [];
  const addrOptions = pkg === 'ali-ons'
    ? { nameSrv }
    : { namesrvAddr: nameSrv, onsAddr: 'unused-address-server' };
  const { Producer, Message } = PACKAGE[pkg];
  const producer = new Producer({
    httpclient: noHttp,
    logger,
    sendMsgTimeout: 2000,
    retryTimesWhenSendFailed: 1,
    pollNameServerInteval: 1000,
    heartbeatBrokerInterval: 1000,
    rebalanceInterval: 1000,
    persistConsumerOffsetInterval: 1000,
    ...addrOptions,
    ...options,
  });
  producer.on('error', err => errors.push(err));
  await within(10000, producer.ready(), `${pkg} producer start`);
  const run = (name, ...args) =>
    (pkg === 'ali-ons' ? producer[name](...args) : co(producer[name](...args)));
  return {
    producer,
    logger,
    errors,
    send: (topic, body = 'body') => within(15000, run('send', new Message(topic, 'TagA', body)), `${pkg} send`),
    // what the producer made of the route: its message queues for the topic
    publishInfo: topic => producer._topicPublishInfoTable.get(topic),
    async close() {
      // Closing tells every known broker about it; these brokers do not
      // exist, so forget them first.
      producer._mqClient._brokerAddrTable.clear();
      await within(5000, Promise.resolve(producer.close()), `${pkg} producer close`);
      const inner = Producer.defaultProducer;
      if (inner) {
        inner._mqClient._brokerAddrTable.clear();
        Producer.defaultProducer = null;
        await within(5000, Promise.resolve(inner.close()), `${pkg} inner producer close`);
      }
    },
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

module.exports = { clientApi, startProducer, recordingLogger, noHttp, within, co, RemotingCommand, MQClientAPI };
