// Checks every manifest in the given file (e.g. `kubectl kustomize` output)
// or directory against the Kubernetes schemas of kubernetes-models (types,
// required fields, enums, formats), then the references between them: probe
// and Service ports name container ports, selectors select the pod template,
// the ConfigMap a volume names exists.
//   node validate.mjs FILE|DIR               exit 1 on any problem
//   node validate.mjs FILE|DIR --pod OUT.yaml --image IMG --port P --http-port H
//     also writes the StatefulSet's pod template as one Pod, with its
//     ConfigMap and ports published on 127.0.0.1, for `podman kube play`;
//     --pods writes several (the ordinals of a StatefulSet), see below.
// With the embedded controller on (RMQNS_controllerDLegerPeers), the peers
// must be the pods' stable names and their ports declared; with peer TLS
// (RMQNS_controllerPeerTls*), all three options set, in a Secret volume
// of the kubernetes.io/tls layout, and a cert-manager Certificate making
// that Secret (when one is here) must name every peer's host. A Secret
// here must be of that layout too.
import fs from "node:fs";
import path from "node:path";
import YAML from "yaml";
import * as core from "kubernetes-models/v1";
import * as apps from "kubernetes-models/apps/v1";
import * as policy from "kubernetes-models/policy/v1";
import * as monitoring from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1";
import * as certManager from "@kubernetes-models/cert-manager/cert-manager.io/v1";

const models = {
  "v1/ConfigMap": core.ConfigMap,
  "v1/Service": core.Service,
  "v1/Pod": core.Pod,
  "v1/Secret": core.Secret,
  "apps/v1/StatefulSet": apps.StatefulSet,
  "policy/v1/PodDisruptionBudget": policy.PodDisruptionBudget,
  "monitoring.coreos.com/v1/ServiceMonitor": monitoring.ServiceMonitor,
  "cert-manager.io/v1/Issuer": certManager.Issuer,
  "cert-manager.io/v1/Certificate": certManager.Certificate,
};

const args = process.argv.slice(2);
const dir = args[0];
const opt = (name) => { const i = args.indexOf(name); return i > 0 ? args[i + 1] : undefined; };
if (!dir) { console.error("usage: validate.mjs FILE|DIR [--pod OUT --image IMG --port P --http-port H | --pods OUT --image IMG --publish ... --ips ...]"); process.exit(2); }

const problems = [];
const docs = [];
const files = fs.statSync(dir).isDirectory()
  ? fs.readdirSync(dir).filter((f) => /\.ya?ml$/.test(f) && !/^kustomization\.ya?ml$/.test(f)).sort().map((f) => path.join(dir, f))
  : [dir];
for (const file of files) {
  const f = path.basename(file);
  for (const d of YAML.parseAllDocuments(fs.readFileSync(file, "utf8"))) {
    if (d.errors.length) { problems.push(`${f}: ${d.errors[0].message}`); continue; }
    const obj = d.toJS();
    if (!obj) continue;
    const key = `${obj.apiVersion}/${obj.kind}`;
    const Model = models[key];
    if (!Model) { problems.push(`${f}: no schema for ${key}`); continue; }
    try {
      new Model(obj).validate();
      docs.push({ f, obj });
      console.log(`k8s: ${f}: ${obj.kind} ${obj.metadata.name}: valid`);
    } catch (e) {
      problems.push(`${f}: ${obj.kind} ${obj.metadata?.name}: ${e.message}`);
    }
  }
}

const of = (kind) => docs.filter((d) => d.obj.kind === kind);

// A certificate name matching a host as OpenSSL's X509_check_host does: the
// same name, or a wildcard '*.' followed by at least two labels.
const certMatches = (pattern, host) =>
  pattern === host || (/^\*\.[^.]+\.[^.]/.test(pattern) && host.slice(host.indexOf(".")) === pattern.slice(1));
const tlsKeys = ["tls.crt", "tls.key", "ca.crt"];
for (const { f, obj: sec } of of("Secret"))
  if (sec.type !== "kubernetes.io/tls" || tlsKeys.some((k) => !(sec.data || {})[k]))
    problems.push(`${f}: Secret ${sec.metadata.name} is not kubernetes.io/tls with ${tlsKeys.join(", ")}`);

// Peer TLS of the container c of the pod template tpl, whose peers are hosts:
// the three options, each a file of one Secret volume mounted read-only.
function checkPeerTls(f, tpl, c, env, hosts) {
  const opts = ["CertPath", "KeyPath", "TrustCertPath"].map((o) => env[`RMQNS_controllerPeerTls${o}`]);
  if (opts.every((o) => o === undefined)) return;
  if (opts.some((o) => o === undefined)) { problems.push(`${f}: controllerPeerTls* options: all three or none`); return; }
  const dirOf = (p) => p.slice(0, p.lastIndexOf("/"));
  const mount = (c.volumeMounts || []).find((m) => m.mountPath === dirOf(opts[0]));
  const secret = (tpl.spec.volumes || []).find((v) => v.name === mount?.name)?.secret;
  if (!mount?.readOnly || !secret) { problems.push(`${f}: ${opts[0]} is in no read-only Secret volume`); return; }
  opts.forEach((o, i) => {
    if (o !== `${mount.mountPath}/${tlsKeys[i]}`) problems.push(`${f}: ${o} is not ${mount.mountPath}/${tlsKeys[i]}`);
  });
  for (const { f: cf, obj: cert } of of("Certificate").filter((d) => d.obj.spec.secretName === secret.secretName)) {
    const before = problems.length;
    for (const h of hosts)
      if (!(cert.spec.dnsNames || []).some((n) => certMatches(n, h))) problems.push(`${cf}: ${cert.metadata.name} does not name the peer ${h}`);
    for (const u of ["server auth", "client auth"])
      if (cert.spec.usages && !cert.spec.usages.includes(u)) problems.push(`${cf}: ${cert.metadata.name} lacks the usage ${u}`);
    if (problems.length === before) console.log(`k8s: Certificate ${cert.metadata.name} makes the Secret ${secret.secretName} and names every peer`);
  }
}
const matches = (sel, labels) => Object.entries(sel || {}).every(([k, v]) => labels?.[k] === v);
for (const { f, obj: sts } of of("StatefulSet")) {
  const tpl = sts.spec.template;
  const labels = tpl.metadata?.labels;
  if (!matches(sts.spec.selector.matchLabels, labels)) problems.push(`${f}: selector does not select the template`);
  if (!of("Service").some((s) => s.obj.metadata.name === sts.spec.serviceName && s.obj.spec.clusterIP === "None"))
    problems.push(`${f}: serviceName ${sts.spec.serviceName} is not a headless Service here`);
  const names = new Set(tpl.spec.containers.flatMap((c) => (c.ports || []).map((p) => p.name)));
  for (const c of tpl.spec.containers) {
    for (const probe of ["startupProbe", "livenessProbe", "readinessProbe"]) {
      const port = c[probe]?.httpGet?.port ?? c[probe]?.tcpSocket?.port;
      if (port === undefined) problems.push(`${f}: ${c.name} has no ${probe}`);
      else if (typeof port === "string" && !names.has(port)) problems.push(`${f}: ${probe} port ${port} is not a container port`);
    }
    if (!c.resources?.requests?.memory || !c.resources?.limits?.memory) problems.push(`${f}: ${c.name} has no memory request and limit`);
  }
  for (const c of tpl.spec.topologySpreadConstraints || [])
    if (!matches(c.labelSelector?.matchLabels, labels)) problems.push(`${f}: a topology spread constraint does not select the pods`);
  for (const v of tpl.spec.volumes || [])
    if (v.configMap && !of("ConfigMap").some((m) => m.obj.metadata.name === v.configMap.name))
      problems.push(`${f}: ConfigMap ${v.configMap.name} is not defined here`);
  for (const { f: sf, obj: svc } of of("Service")) {
    if (!matches(svc.spec.selector, labels)) problems.push(`${sf}: Service ${svc.metadata.name} does not select the pods`);
    for (const p of svc.spec.ports) if (typeof p.targetPort === "string" && !names.has(p.targetPort))
      problems.push(`${sf}: targetPort ${p.targetPort} is not a container port`);
  }
  for (const { f: pf, obj: pdb } of of("PodDisruptionBudget"))
    if (!matches(pdb.spec.selector.matchLabels, labels)) problems.push(`${pf}: the budget does not select the pods`);
  for (const { f: mf, obj: sm } of of("ServiceMonitor")) {
    const svcs = of("Service").filter((s) => matches(sm.spec.selector.matchLabels, s.obj.metadata.labels));
    if (svcs.length !== 1) problems.push(`${mf}: selects ${svcs.length} Services, expected 1`);
    for (const ep of sm.spec.endpoints)
      if (!svcs.every((s) => s.obj.spec.ports.some((p) => p.name === ep.port))) problems.push(`${mf}: port ${ep.port} not on the Service`);
  }

  // The embedded controller: one controllerDLegerPeers entry per replica,
  // each host the stable name of that ordinal's pod under the headless
  // Service, its port a container port and a port of that Service, and the
  // Raft port (peer port + controllerRaftPortOffset) likewise.
  for (const c of tpl.spec.containers) {
    const env = Object.fromEntries((c.env || []).filter((e) => e.value !== undefined).map((e) => [e.name, e.value]));
    const peers = env.RMQNS_controllerDLegerPeers;
    if (!peers) continue;
    const entries = peers.split(";").filter((e) => e.trim());
    if (entries.length !== (sts.spec.replicas ?? 1))
      problems.push(`${f}: ${entries.length} controllerDLegerPeers entries for ${sts.spec.replicas} replicas`);
    const headless = of("Service").find((s) => s.obj.metadata.name === sts.spec.serviceName)?.obj;
    const offset = Number(env.RMQNS_controllerRaftPortOffset ?? 1000);
    const containerPortOf = (n) => (c.ports || []).find((p) => p.containerPort === n);
    const checked = new Set();
    entries.forEach((e, i) => {
      const m = /^([^-]+)-([^:]+):(\d+)$/.exec(e.trim());
      if (!m) { problems.push(`${f}: controllerDLegerPeers entry ${e} is not id-host:port`); return; }
      const [, id, host, port] = m;
      if (id !== `n${i}`) problems.push(`${f}: entry ${i} has id ${id}, the pod's ordinal gives n${i}`);
      const stable = `${sts.metadata.name}-${i}.${sts.spec.serviceName}`;
      if (host !== stable && !host.startsWith(`${stable}.`)) problems.push(`${f}: entry ${i} names ${host}, not the pod's stable name ${stable}`);
      for (const n of [Number(port), Number(port) + offset]) {
        if (checked.has(n)) continue;
        checked.add(n);
        const cp = containerPortOf(n);
        if (!cp) problems.push(`${f}: port ${n} of the controller is not a container port`);
        else if (!headless?.spec.ports.some((p) => p.port === n && p.targetPort === cp.name))
          problems.push(`${f}: port ${n} (${cp.name}) is not on the headless Service ${sts.spec.serviceName}`);
      }
    });
    if (headless && !headless.spec.publishNotReadyAddresses)
      problems.push(`${f}: the headless Service hides not-ready pods: controllers could not find each other before ready`);
    checkPeerTls(f, tpl, c, env, entries.map((e) => /^[^-]+-([^:]+):/.exec(e.trim())?.[1]).filter(Boolean));
  }

  // Pods of the StatefulSet, as podman kube play runs them: the claims
  // become podman volumes, the ports are published on 127.0.0.1 only.
  //   --pod OUT --port P --http-port H [--claim C] [--name N]
  //     one pod (ordinal 0), port "http" on H and every other port on P
  //   --pods OUT --publish "NAME=PORT,...;..." --ips "IP;..." [--claim C] [--name N]
  //     one pod per ';'-separated --publish group (ordinals 0, 1, ...),
  //     named N-K with claim C-K, the listed ports published; each pod's
  //     hostname and subdomain as the StatefulSet gives them, and the
  //     headless Service's per-pod names (STS-K.SERVICE) written into every
  //     pod's /etc/hosts with the addresses of --ips, since podman has no
  //     Services (kube play --ip gives the pods those addresses in order)
  //   --secret-dir NAME=DIR
  //     the Secret volume of Secret NAME as the directory DIR (hostPath),
  //     holding the Secret's files: podman 4.3's kube play crashes on
  //     Secret volumes
  const makePod = (ordinal, name, claim, hostPortOf, hostAliases) => {
    const pod = structuredClone(tpl);
    for (const c of [...(pod.spec.initContainers || []), ...pod.spec.containers]) c.image = opt("--image") || c.image;
    // A port not published is left out: podman 4.3 would publish it on
    // every address of the host at its own number.
    for (const c of pod.spec.containers) {
      c.ports = (c.ports || []).filter((p) => hostPortOf(p.name));
      for (const p of c.ports) { p.hostIP = "127.0.0.1"; p.hostPort = hostPortOf(p.name); }
    }
    for (const t of sts.spec.volumeClaimTemplates || [])
      (pod.spec.volumes ||= []).push({ name: t.metadata.name, persistentVolumeClaim: { claimName: claim } });
    const [secretName, secretDir] = (opt("--secret-dir") || "=").split("=");
    for (const v of pod.spec.volumes || [])
      if (v.secret && v.secret.secretName === secretName) { delete v.secret; v.hostPath = { path: secretDir, type: "Directory" }; }
    delete pod.spec.affinity;
    delete pod.spec.topologySpreadConstraints;
    if (hostAliases) {
      pod.spec.hostname = `${sts.metadata.name}-${ordinal}`;
      pod.spec.subdomain = sts.spec.serviceName;
      pod.spec.hostAliases = hostAliases;
    }
    // podman 4.3 removes a finished "once" init container racily ("cannot
    // remove container ... as it is running"); "always" keeps it.
    const annotations = { ...(pod.metadata.annotations || {}), "io.podman.annotations.init.container.type": "always" };
    const podDoc = { apiVersion: "v1", kind: "Pod", metadata: { name, labels: pod.metadata.labels, annotations }, spec: pod.spec };
    try { new core.Pod(podDoc).validate(); } catch (e) { problems.push(`generated pod ${name}: ${e.message}`); }
    return YAML.stringify(podDoc);
  };
  const writePods = (out, pods) => {
    const cms = of("ConfigMap").map((m) => YAML.stringify(m.obj));
    fs.writeFileSync(out, [...cms, ...pods].join("---\n"));
    console.log(`k8s: wrote ${out} (${pods.length} pods)`);
  };
  if (opt("--pod")) {
    const port = Number(opt("--port")), http = Number(opt("--http-port"));
    writePods(opt("--pod"), [makePod(0, opt("--name") || `${sts.metadata.name}-0`,
      opt("--claim") || `data-${sts.metadata.name}-0`, (n) => (n === "http" ? http : port))]);
  }
  if (opt("--pods")) {
    const groups = (opt("--publish") || "").split(";");
    const ips = (opt("--ips") || "").split(";");
    if (ips.length !== groups.length) problems.push(`--ips names ${ips.length} addresses for ${groups.length} pods`);
    const aliases = ips.map((ip, k) => ({ ip, hostnames: [`${sts.metadata.name}-${k}.${sts.spec.serviceName}`] }));
    const prefix = opt("--name") || sts.metadata.name, claim = opt("--claim") || `data-${sts.metadata.name}`;
    writePods(opt("--pods"), groups.map((g, k) => {
      const ports = Object.fromEntries(g.split(",").filter(Boolean).map((kv) => kv.split("=")).map(([n, v]) => [n, Number(v)]));
      return makePod(k, `${prefix}-${k}`, `${claim}-${k}`, (n) => ports[n], aliases);
    }));
  }
}

for (const p of problems) console.error(`k8s: PROBLEM: ${p}`);
if (!docs.length) { console.error("k8s: no manifests"); process.exit(1); }
console.log(`k8s: ${docs.length} manifests, ${problems.length} problems`);
process.exit(problems.length ? 1 : 0);
