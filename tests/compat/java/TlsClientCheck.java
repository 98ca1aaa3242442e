/*
 * A NameServer client built the way a RocketMQ Java client is when started
 * with -Dtls.enable=true: Netty's SslHandler first in the pipeline, made by
 * SslContextBuilder.forClient() with the JDK provider and no SNI host, then
 * the remoting codec (4-byte frame length, 4-byte header length whose top
 * byte is the serialize type, JSON header, body).
 *
 * The TLS choices follow the client's system properties:
 *   tls.enable              TLS at all (default false)
 *   tls.test.mode.enable    default true: trust any server certificate
 *   tls.client.authServer   with test mode off: check the server's
 *                           certificate against tls.client.trustCertPath
 *   tls.client.certPath / tls.client.keyPath
 *                           with test mode off: present this certificate
 * and, for the test only, check.tls.protocols (e.g. TLSv1.3): the protocols
 * offered instead of Netty's defaults.
 *
 * Usage:
 *   java TlsClientCheck HOST:PORT check    register a broker, then check
 *                                          106 and 105 (hit and miss)
 *   java TlsClientCheck HOST:PORT refused  expect no answer to 106: the
 *                                          server refuses this connection
 * Exit status 0 when every check holds, 1 otherwise.
 */

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.netty.handler.codec.MessageToByteEncoder;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslProvider;
import io.netty.handler.ssl.util.InsecureTrustManagerFactory;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLSession;

public final class TlsClientCheck {
    /* generous bounds against a hang, not measurements */
    private static final int CONNECT_TIMEOUT_MS = 5000;
    private static final long ANSWER_TIMEOUT_S = 20;
    private static final int MAX_FRAME = 16 * 1024 * 1024;
    private static final int VERSION = 479;

    private static final String CLUSTER = "TlsCluster";
    private static final String BROKER = "tls-broker-a";
    private static final String BROKER_ADDR = "127.0.0.1:10911";
    private static final String TOPIC = "TlsTopic";

    private static int failures;

    /* ---- the remoting codec ---- */

    static final class Request {
        final int code;
        final int opaque;
        final Map<String, String> ext;
        final byte[] body;

        Request(int code, int opaque, Map<String, String> ext, byte[] body) {
            this.code = code;
            this.opaque = opaque;
            this.ext = ext;
            this.body = body;
        }

        /* The header as the Java codec writes it: keys in order, ext values as strings. */
        String headerJson() {
            StringBuilder sb = new StringBuilder();
            sb.append("{\"code\":").append(code);
            sb.append(",\"extFields\":{");
            boolean first = true;
            for (Map.Entry<String, String> e : new TreeMap<>(ext).entrySet()) {
                if (!first) {
                    sb.append(',');
                }
                first = false;
                sb.append(Json.quote(e.getKey())).append(':').append(Json.quote(e.getValue()));
            }
            sb.append("},\"flag\":0,\"language\":\"JAVA\",\"opaque\":").append(opaque);
            sb.append(",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":").append(VERSION).append('}');
            return sb.toString();
        }
    }

    static final class Answer {
        final Map<String, Object> header;
        final byte[] body;
        final String error; /* non-null: the connection ended or failed instead */

        Answer(Map<String, Object> header, byte[] body, String error) {
            this.header = header;
            this.body = body;
            this.error = error;
        }

        int code() {
            return ((Number) header.get("code")).intValue();
        }

        int opaque() {
            return ((Number) header.get("opaque")).intValue();
        }

        boolean isResponse() {
            Object flag = header.get("flag");
            return flag instanceof Number && (((Number) flag).intValue() & 1) != 0;
        }
    }

    static final class RequestEncoder extends MessageToByteEncoder<Request> {
        @Override
        protected void encode(ChannelHandlerContext ctx, Request r, ByteBuf out) {
            byte[] header = r.headerJson().getBytes(StandardCharsets.UTF_8);
            int bodyLen = r.body == null ? 0 : r.body.length;
            out.writeInt(4 + header.length + bodyLen);
            out.writeInt(header.length); /* serialize type 0 (JSON) in the top byte */
            out.writeBytes(header);
            if (bodyLen > 0) {
                out.writeBytes(r.body);
            }
        }
    }

    /* Gets frames without their length field (LengthFieldBasedFrameDecoder strips it). */
    static final class AnswerHandler extends SimpleChannelInboundHandler<ByteBuf> {
        private final BlockingQueue<Answer> answers;
        private volatile boolean failed;

        AnswerHandler(BlockingQueue<Answer> answers) {
            this.answers = answers;
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, ByteBuf frame) {
            int headerField = frame.readInt();
            int type = (headerField >>> 24) & 0xff;
            int headerLen = headerField & 0xffffff;
            if (type != 0 || headerLen > frame.readableBytes()) {
                answers.add(new Answer(null, null, "a frame that is not a JSON remoting answer"));
                failed = true;
                ctx.close();
                return;
            }
            byte[] header = new byte[headerLen];
            frame.readBytes(header);
            byte[] body = new byte[frame.readableBytes()];
            frame.readBytes(body);
            try {
                Object h = Json.parse(new String(header, StandardCharsets.UTF_8));
                @SuppressWarnings("unchecked")
                Map<String, Object> m = (Map<String, Object>) h;
                answers.add(new Answer(m, body, null));
            } catch (RuntimeException e) {
                answers.add(new Answer(null, null, "header does not parse: " + e.getMessage()));
            }
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            answers.add(new Answer(null, null, "connection closed"));
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            if (!failed) {
                answers.add(new Answer(null, null, "connection failed: " + cause));
            }
            failed = true;
            ctx.close();
        }
    }

    /* ---- TLS as the client's properties ask ---- */

    static SslContext clientSslContext() throws Exception {
        if (!Boolean.parseBoolean(System.getProperty("tls.enable", "false"))) {
            return null;
        }
        SslContextBuilder b = SslContextBuilder.forClient().sslProvider(SslProvider.JDK);
        /* not a client property: newer Netty releases than Debian's offer
         * TLSv1.3 by default, and this lets the test offer it too */
        String protocols = System.getProperty("check.tls.protocols", "");
        if (!protocols.isEmpty()) {
            b.protocols(protocols.split(","));
        }
        boolean testMode = Boolean.parseBoolean(System.getProperty("tls.test.mode.enable", "true"));
        if (testMode) {
            return b.trustManager(InsecureTrustManagerFactory.INSTANCE).build();
        }
        String trust = System.getProperty("tls.client.trustCertPath", "");
        if (Boolean.parseBoolean(System.getProperty("tls.client.authServer", "false"))) {
            if (!trust.isEmpty()) {
                b.trustManager(new File(trust));
            }
        } else {
            b.trustManager(InsecureTrustManagerFactory.INSTANCE);
        }
        String cert = System.getProperty("tls.client.certPath", "");
        String key = System.getProperty("tls.client.keyPath", "");
        if (!cert.isEmpty() && !key.isEmpty()) {
            b.keyManager(new File(cert), new File(key));
        }
        return b.build();
    }

    /* ---- checks ---- */

    private static void check(boolean ok, String what) {
        System.out.println((ok ? "ok   " : "FAIL ") + what);
        if (!ok) {
            failures++;
        }
    }

    private static Answer call(Channel ch, BlockingQueue<Answer> answers, Request r) throws InterruptedException {
        ch.writeAndFlush(r);
        for (;;) {
            Answer a = answers.poll(ANSWER_TIMEOUT_S, TimeUnit.SECONDS);
            if (a == null) {
                return new Answer(null, null, "no answer within " + ANSWER_TIMEOUT_S + " s");
            }
            if (a.error != null || a.isResponse()) {
                return a; /* server-initiated requests are skipped */
            }
        }
    }

    private static boolean answered(Answer a, Request r, int code, String what) {
        if (a.error != null) {
            check(false, what + ": " + a.error);
            return false;
        }
        check(a.opaque() == r.opaque, what + ": opaque " + a.opaque() + " (sent " + r.opaque + ")");
        check(a.code() == code, what + ": code " + a.code() + " (want " + code + ")"
                + (a.header.get("remark") != null ? ", remark " + a.header.get("remark") : ""));
        return a.code() == code;
    }

    private static byte[] registrationBody() {
        StringBuilder topics = new StringBuilder();
        String[] names = { TOPIC, TOPIC + "Second" };
        for (int i = 0; i < names.length; i++) {
            if (i > 0) {
                topics.append(',');
            }
            topics.append(Json.quote(names[i])).append(":{\"order\":false,\"perm\":6,\"readQueueNums\":4,")
                    .append("\"topicFilterType\":\"SINGLE_TAG\",\"topicName\":").append(Json.quote(names[i]))
                    .append(",\"topicSysFlag\":0,\"writeQueueNums\":4}");
        }
        String body = "{\"filterServerList\":[],\"topicConfigSerializeWrapper\":{"
                + "\"dataVersion\":{\"counter\":1,\"stateVersion\":0,\"timestamp\":1700000000000},"
                + "\"topicConfigTable\":{" + topics + "}}}";
        return body.getBytes(StandardCharsets.UTF_8);
    }

    private static Object path(Object node, String... keys) {
        for (String k : keys) {
            if (node instanceof Map) {
                node = ((Map<?, ?>) node).get(k);
            } else if (node instanceof List && k.matches("\\d+")) {
                List<?> l = (List<?>) node;
                int i = Integer.parseInt(k);
                node = i < l.size() ? l.get(i) : null;
            } else {
                return null;
            }
        }
        return node;
    }

    private static Object bodyJson(Answer a, String what) {
        try {
            return Json.parse(new String(a.body, StandardCharsets.UTF_8));
        } catch (RuntimeException e) {
            check(false, what + ": body does not parse: " + e.getMessage());
            return null;
        }
    }

    private static void runChecks(Channel ch, BlockingQueue<Answer> answers) throws InterruptedException {
        int opaque = 1;
        Map<String, String> ext = new LinkedHashMap<>();
        ext.put("brokerName", BROKER);
        ext.put("brokerAddr", BROKER_ADDR);
        ext.put("clusterName", CLUSTER);
        ext.put("haServerAddr", "127.0.0.1:10912");
        ext.put("brokerId", "0");
        ext.put("compressed", "false");
        ext.put("bodyCrc32", "0");
        Request reg = new Request(103, opaque++, ext, registrationBody());
        if (!answered(call(ch, answers, reg), reg, 0, "103 REGISTER_BROKER")) {
            return;
        }

        Request cluster = new Request(106, opaque++, new LinkedHashMap<>(), null);
        Answer a = call(ch, answers, cluster);
        if (answered(a, cluster, 0, "106 GET_BROKER_CLUSTER_INFO")) {
            Object info = bodyJson(a, "106");
            Object addr = path(info, "brokerAddrTable", BROKER, "brokerAddrs", "0");
            check(BROKER_ADDR.equals(addr), "106: brokerAddrTable." + BROKER + ".brokerAddrs.0 = " + addr);
            Object members = path(info, "clusterAddrTable", CLUSTER);
            check(members instanceof List && ((List<?>) members).contains(BROKER),
                    "106: clusterAddrTable." + CLUSTER + " = " + members);
        }

        Map<String, String> topicExt = new LinkedHashMap<>();
        topicExt.put("topic", TOPIC);
        Request route = new Request(105, opaque++, topicExt, null);
        a = call(ch, answers, route);
        if (answered(a, route, 0, "105 GET_ROUTEINFO_BY_TOPIC " + TOPIC)) {
            Object r = bodyJson(a, "105");
            Object qname = path(r, "queueDatas", "0", "brokerName");
            Object rq = path(r, "queueDatas", "0", "readQueueNums");
            check(BROKER.equals(qname) && rq instanceof Number && ((Number) rq).intValue() == 4,
                    "105: queueDatas[0] = " + path(r, "queueDatas", "0"));
            Object addr = path(r, "brokerDatas", "0", "brokerAddrs", "0");
            check(BROKER_ADDR.equals(addr), "105: brokerDatas[0].brokerAddrs.0 = " + addr);
            check(CLUSTER.equals(path(r, "brokerDatas", "0", "cluster")),
                    "105: brokerDatas[0].cluster = " + path(r, "brokerDatas", "0", "cluster"));
        }

        Map<String, String> missExt = new LinkedHashMap<>();
        missExt.put("topic", "NoSuchTlsTopic");
        Request miss = new Request(105, opaque++, missExt, null);
        answered(call(ch, answers, miss), miss, 17, "105 GET_ROUTEINFO_BY_TOPIC of an unknown topic");
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2 || !args[0].contains(":") || !(args[1].equals("check") || args[1].equals("refused"))) {
            System.err.println("usage: TlsClientCheck HOST:PORT check|refused");
            System.exit(2);
        }
        String host = args[0].substring(0, args[0].lastIndexOf(':'));
        int port = Integer.parseInt(args[0].substring(args[0].lastIndexOf(':') + 1));
        boolean expectRefused = args[1].equals("refused");
        SslContext ssl = clientSslContext();
        BlockingQueue<Answer> answers = new LinkedBlockingQueue<>();
        EventLoopGroup group = new NioEventLoopGroup(1);
        try {
            Bootstrap boot = new Bootstrap().group(group).channel(NioSocketChannel.class)
                    .option(ChannelOption.TCP_NODELAY, true)
                    .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, CONNECT_TIMEOUT_MS)
                    .handler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            if (ssl != null) {
                                ch.pipeline().addLast("sslHandler", ssl.newHandler(ch.alloc()));
                            }
                            ch.pipeline().addLast(new RequestEncoder(),
                                    new LengthFieldBasedFrameDecoder(MAX_FRAME, 0, 4, 0, 4),
                                    new AnswerHandler(answers));
                        }
                    });
            ChannelFuture f = boot.connect(host, port).awaitUninterruptibly();
            if (!f.isSuccess()) {
                check(false, "connect to " + args[0] + ": " + f.cause());
                System.exit(1);
            }
            Channel ch = f.channel();
            String mode = ssl == null ? "plaintext" : "TLS";
            if (ssl != null) {
                SslHandler h = ch.pipeline().get(SslHandler.class);
                boolean done = h.handshakeFuture().awaitUninterruptibly(ANSWER_TIMEOUT_S, TimeUnit.SECONDS);
                if (!done || !h.handshakeFuture().isSuccess()) {
                    Throwable why = done ? h.handshakeFuture().cause() : null;
                    check(expectRefused, "TLS handshake did not complete: " + (why != null ? why : "no end"));
                    ch.close().awaitUninterruptibly();
                    System.exit(failures == 0 ? 0 : 1);
                }
                SSLSession s = h.engine().getSession();
                mode = s.getProtocol() + " " + s.getCipherSuite();
            }
            System.out.println("connected to " + args[0] + " over " + mode);
            if (expectRefused) {
                Request r = new Request(106, 1, new LinkedHashMap<>(), null);
                Answer a = call(ch, answers, r);
                check(a.error != null, "no answer on a refused connection"
                        + (a.error != null ? " (" + a.error + ")" : ": got code " + a.code()));
            } else {
                runChecks(ch, answers);
            }
            ch.close().awaitUninterruptibly();
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly();
        }
        System.exit(failures == 0 ? 0 : 1);
    }

    /* ---- a small lenient JSON reader: the NameServer's bodies use fastjson's
     * forms, such as unquoted integer keys ({0:"127.0.0.1:10911"}) ---- */

    static final class Json {
        private final String s;
        private int i;

        private Json(String s) {
            this.s = s;
        }

        static Object parse(String text) {
            Json j = new Json(text);
            Object v = j.value();
            j.ws();
            if (j.i != j.s.length()) {
                throw j.fail("trailing characters");
            }
            return v;
        }

        static String quote(String v) {
            StringBuilder sb = new StringBuilder("\"");
            for (char c : v.toCharArray()) {
                if (c == '"' || c == '\\') {
                    sb.append('\\').append(c);
                } else if (c < 0x20) {
                    sb.append(String.format("\\u%04x", (int) c));
                } else {
                    sb.append(c);
                }
            }
            return sb.append('"').toString();
        }

        private RuntimeException fail(String why) {
            return new IllegalArgumentException(why + " at offset " + i);
        }

        private void ws() {
            while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
                i++;
            }
        }

        private Object value() {
            ws();
            if (i >= s.length()) {
                throw fail("unexpected end");
            }
            char c = s.charAt(i);
            if (c == '{') {
                return object();
            }
            if (c == '[') {
                return array();
            }
            if (c == '"') {
                return string();
            }
            if (s.startsWith("true", i)) {
                i += 4;
                return Boolean.TRUE;
            }
            if (s.startsWith("false", i)) {
                i += 5;
                return Boolean.FALSE;
            }
            if (s.startsWith("null", i)) {
                i += 4;
                return null;
            }
            return number();
        }

        private Map<String, Object> object() {
            Map<String, Object> m = new LinkedHashMap<>();
            i++;
            ws();
            if (i < s.length() && s.charAt(i) == '}') {
                i++;
                return m;
            }
            for (;;) {
                ws();
                String key = i < s.length() && s.charAt(i) == '"' ? string() : String.valueOf(number());
                ws();
                if (i >= s.length() || s.charAt(i) != ':') {
                    throw fail("':' expected");
                }
                i++;
                m.put(key, value());
                ws();
                if (i < s.length() && s.charAt(i) == ',') {
                    i++;
                } else if (i < s.length() && s.charAt(i) == '}') {
                    i++;
                    return m;
                } else {
                    throw fail("',' or '}' expected");
                }
            }
        }

        private List<Object> array() {
            List<Object> l = new ArrayList<>();
            i++;
            ws();
            if (i < s.length() && s.charAt(i) == ']') {
                i++;
                return l;
            }
            for (;;) {
                l.add(value());
                ws();
                if (i < s.length() && s.charAt(i) == ',') {
                    i++;
                } else if (i < s.length() && s.charAt(i) == ']') {
                    i++;
                    return l;
                } else {
                    throw fail("',' or ']' expected");
                }
            }
        }

        private String string() {
            StringBuilder sb = new StringBuilder();
            i++;
            while (i < s.length()) {
                char c = s.charAt(i++);
                if (c == '"') {
                    return sb.toString();
                }
                if (c != '\\') {
                    sb.append(c);
                    continue;
                }
                if (i >= s.length()) {
                    break;
                }
                char e = s.charAt(i++);
                switch (e) {
                    case 'n': sb.append('\n'); break;
                    case 't': sb.append('\t'); break;
                    case 'r': sb.append('\r'); break;
                    case 'b': sb.append('\b'); break;
                    case 'f': sb.append('\f'); break;
                    case 'u':
                        if (i + 4 > s.length()) {
                            throw fail("short \\u escape");
                        }
                        sb.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                        i += 4;
                        break;
                    default: sb.append(e);
                }
            }
            throw fail("unterminated string");
        }

        private Number number() {
            int start = i;
            while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) {
                i++;
            }
            String t = s.substring(start, i);
            if (t.isEmpty()) {
                throw fail("value expected");
            }
            if (t.matches("-?\\d+")) {
                return Long.parseLong(t);
            }
            return Double.parseDouble(t);
        }
    }
}
