// sdk_test.mjs — the AWS SDK for JavaScript v3 (@aws-sdk/client-s3, pinned
// in package-lock.json) against an iolake-aio: multipart uploads with
// per-part checksums and CRC32 / CRC64NVME full-object and SHA256 composite
// checksums, GetObject / HeadObject with ChecksumMode ENABLED (the SDK
// checks a full-object value against the body itself: a request handler
// that spoils the header must make it fail), a part read with PartNumber,
// and GetObjectAttributes with ObjectParts; SSE-C on PutObject, GetObject
// (ranges), HeadObject and a multipart upload. Expected values are computed
// here (zlib.crc32, a CRC64NVME table, node:crypto), not taken from the SDK.
//
// Run by tests/integration/test_sdk_js.py with IOLAKE_EP, IOLAKE_AK,
// IOLAKE_SK in the environment. Prints "ok: ..." lines; exits 1 on the
// first failure.
import { createHash, randomBytes } from "node:crypto";
import zlib from "node:zlib";
import {
  S3Client, CreateBucketCommand, CreateMultipartUploadCommand, UploadPartCommand,
  CompleteMultipartUploadCommand, ListPartsCommand, GetObjectCommand, HeadObjectCommand,
  GetObjectAttributesCommand, PutObjectCommand,
} from "@aws-sdk/client-s3";

const ep = process.env.IOLAKE_EP, ak = process.env.IOLAKE_AK, sk = process.env.IOLAKE_SK;
const BUCKET = "sdkjs";
const MIB = 1 << 20;

function fail(msg) {
  console.log("FAIL: " + msg);
  process.exit(1);
}
function expect(got, want, what) {
  const g = JSON.stringify(got), w = JSON.stringify(want);
  if (g !== w) fail(`${what}: got ${g} want ${w}`);
  console.log(`ok: ${what} -> ${g.length > 90 ? g.slice(0, 90) + "..." : g}`);
}

// ---- checksums computed here
const T64 = (() => {
  const poly = 0x9a6c9329ac4bc9b5n, t = new Array(256);
  for (let i = 0; i < 256; i++) {
    let c = BigInt(i);
    for (let b = 0; b < 8; b++) c = c & 1n ? (c >> 1n) ^ poly : c >> 1n;
    t[i] = c;
  }
  return t;
})();
function crc64nvme(buf) {
  let c = 0xffffffffffffffffn;
  for (const byte of buf) c = (c >> 8n) ^ T64[Number((c ^ BigInt(byte)) & 0xffn)];
  c ^= 0xffffffffffffffffn;
  const out = Buffer.alloc(8);
  out.writeBigUInt64BE(c);
  return out.toString("base64");
}
function crc32(buf) {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(zlib.crc32(buf) >>> 0);
  return out.toString("base64");
}
function sha256(buf) {
  return createHash("sha256").update(buf).digest("base64");
}
const CK = { CRC32: crc32, CRC64NVME: crc64nvme, SHA256: sha256 };
function composite(algo, values) {
  return CK[algo](Buffer.concat(values.map((v) => Buffer.from(v, "base64")))) + "-" + values.length;
}

function client(extra = {}) {
  return new S3Client({
    endpoint: ep, region: "us-east-1", forcePathStyle: true,
    credentials: { accessKeyId: ak, secretAccessKey: sk }, maxAttempts: 1, ...extra,
  });
}

// A request handler that spoils the x-amz-checksum-<algo> header of every
// response: the SDK's own validation must then refuse the body.
function spoilingHandler(inner, header) {
  return {
    metadata: inner.metadata,
    destroy: () => inner.destroy(),
    updateHttpClientConfig: (...a) => inner.updateHttpClientConfig?.(...a),
    httpHandlerConfigs: () => inner.httpHandlerConfigs?.() ?? {},
    async handle(req, opts) {
      const r = await inner.handle(req, opts);
      if (r.response.headers[header]) r.response.headers[header] = "AAAAAAAAAAA=";
      return r;
    },
  };
}

async function upload(s3, key, algo, type, sizes) {
  const full = type === "FULL_OBJECT";
  const mp = await s3.send(new CreateMultipartUploadCommand({
    Bucket: BUCKET, Key: key, ChecksumAlgorithm: algo, ChecksumType: type,
  }));
  expect([mp.ChecksumAlgorithm, mp.ChecksumType], [algo, type], `${key}: create echoes`);
  const datas = [], parts = [], values = [];
  for (let i = 0; i < sizes.length; i++) {
    const d = randomBytes(sizes[i]);
    const r = await s3.send(new UploadPartCommand({
      Bucket: BUCKET, Key: key, UploadId: mp.UploadId, PartNumber: i + 1, Body: d,
      ChecksumAlgorithm: algo,
    }));
    expect(r["Checksum" + algo], CK[algo](d), `${key}: part ${i + 1} checksum`);
    datas.push(d);
    values.push(r["Checksum" + algo]);
    parts.push({ PartNumber: i + 1, ETag: r.ETag, ["Checksum" + algo]: r["Checksum" + algo] });
  }
  const lp = await s3.send(new ListPartsCommand({ Bucket: BUCKET, Key: key, UploadId: mp.UploadId }));
  expect(lp.Parts.map((p) => p["Checksum" + algo]), values, `${key}: ListParts`);
  const data = Buffer.concat(datas);
  const want = full ? CK[algo](data) : composite(algo, values);
  const cm = { Bucket: BUCKET, Key: key, UploadId: mp.UploadId, MultipartUpload: { Parts: parts } };
  if (full) {  // the whole object's value, checked by the store
    cm["Checksum" + algo] = want;
    cm.ChecksumType = "FULL_OBJECT";
  }
  const c = await s3.send(new CompleteMultipartUploadCommand(cm));
  expect([c["Checksum" + algo], c.ChecksumType], [want, type], `${key}: complete`);

  // GetObject with ChecksumMode: for FULL_OBJECT the SDK validates the body
  const g = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key, ChecksumMode: "ENABLED" }));
  const body = Buffer.from(await g.Body.transformToByteArray());
  expect([body.equals(data), g["Checksum" + algo], g.ChecksumType], [true, want, type],
    `${key}: GetObject ChecksumMode ENABLED`);
  const h = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key, ChecksumMode: "ENABLED" }));
  expect([h["Checksum" + algo], h.ContentLength], [want, data.length], `${key}: HeadObject`);
  // one part, with its own checksum (validated by the SDK against the part)
  const gp = await s3.send(new GetObjectCommand({
    Bucket: BUCKET, Key: key, PartNumber: 2, ChecksumMode: "ENABLED",
  }));
  const pb = Buffer.from(await gp.Body.transformToByteArray());
  expect([pb.equals(datas[1]), gp["Checksum" + algo], gp.PartsCount], [true, values[1], sizes.length],
    `${key}: GetObject PartNumber 2`);
  // GetObjectAttributes, a page of one part after part 1
  const at = await s3.send(new GetObjectAttributesCommand({
    Bucket: BUCKET, Key: key, ObjectAttributes: ["Checksum", "ObjectParts", "ObjectSize"],
    MaxParts: 1, PartNumberMarker: "1",
  }));
  expect([at.Checksum["Checksum" + algo], at.Checksum.ChecksumType, at.ObjectSize,
    at.ObjectParts.TotalPartsCount, at.ObjectParts.IsTruncated,
    at.ObjectParts.Parts.map((p) => [p.PartNumber, p.Size, p["Checksum" + algo]])],
  [want, type, data.length, sizes.length, sizes.length > 2,
    [[2, sizes[1], values[1]]]], `${key}: GetObjectAttributes`);
  return { data, want };
}

async function spoiled(key, algo) {
  const base = client();
  const s3 = client({ requestHandler: spoilingHandler(base.config.requestHandler,
    "x-amz-checksum-" + algo.toLowerCase()) });
  try {
    const g = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key, ChecksumMode: "ENABLED" }));
    await g.Body.transformToByteArray();
  } catch (e) {
    expect(/checksum/i.test(String(e.message)), true,
      `${key}: the SDK refuses a body whose ${algo} does not match (${String(e.message).slice(0, 60)})`);
    return;
  }
  fail(`${key}: a spoiled ${algo} header was not noticed by the SDK`);
}

// SSE-C with the SDK: SSECustomerAlgorithm / SSECustomerKey on PutObject,
// GetObject (whole and a range across a 64 KiB cipher chunk), HeadObject,
// CreateMultipartUpload and UploadPart (Complete needs no key); the key's
// MD5 the SDK computed echoed back; no key is 400, another key 403.
async function code(p) {
  try {
    await p;
  } catch (e) {
    return [e.name, e.$metadata?.httpStatusCode];
  }
  return ["OK", 200];
}
async function sseC(s3) {
  // a 32-character key: the SDK takes a string that is not base64 as raw bytes
  const key = randomBytes(16).toString("hex"), key2 = randomBytes(16).toString("hex");
  const ssec = { SSECustomerAlgorithm: "AES256", SSECustomerKey: key };
  const md5 = createHash("md5").update(Buffer.from(key)).digest("base64");
  const data = randomBytes(MIB + 4321);
  const p = await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: "ssec", Body: data, ...ssec }));
  expect([p.SSECustomerAlgorithm, p.SSECustomerKeyMD5], ["AES256", md5], "SSE-C PutObject echoes");
  const g = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: "ssec", ...ssec }));
  expect(Buffer.from(await g.Body.transformToByteArray()).equals(data), true, "SSE-C GetObject");
  const r = await s3.send(new GetObjectCommand({
    Bucket: BUCKET, Key: "ssec", Range: "bytes=65530-70000", ...ssec,
  }));
  expect(Buffer.from(await r.Body.transformToByteArray()).equals(data.subarray(65530, 70001)), true,
    "SSE-C GetObject Range across a cipher chunk");
  const h = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: "ssec", ...ssec }));
  expect([h.ContentLength, h.SSECustomerKeyMD5], [data.length, md5], "SSE-C HeadObject");
  expect(await code(s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: "ssec" }))),
    ["InvalidRequest", 400], "SSE-C GetObject without the key");
  expect(await code(s3.send(new GetObjectCommand({
    Bucket: BUCKET, Key: "ssec", SSECustomerAlgorithm: "AES256", SSECustomerKey: key2,
  }))), ["AccessDenied", 403], "SSE-C GetObject with another key");

  const mp = await s3.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: "ssec-mpu", ...ssec }));
  expect(mp.SSECustomerAlgorithm, "AES256", "SSE-C CreateMultipartUpload");
  const datas = [randomBytes(5 * MIB), randomBytes(70000)], parts = [];
  for (let i = 0; i < datas.length; i++) {
    const u = await s3.send(new UploadPartCommand({
      Bucket: BUCKET, Key: "ssec-mpu", UploadId: mp.UploadId, PartNumber: i + 1, Body: datas[i], ...ssec,
    }));
    parts.push({ PartNumber: i + 1, ETag: u.ETag });
  }
  await s3.send(new CompleteMultipartUploadCommand({
    Bucket: BUCKET, Key: "ssec-mpu", UploadId: mp.UploadId, MultipartUpload: { Parts: parts },
  }));
  const all = Buffer.concat(datas);
  const gm = await s3.send(new GetObjectCommand({
    Bucket: BUCKET, Key: "ssec-mpu", Range: `bytes=${5 * MIB - 100}-${all.length - 1}`, ...ssec,
  }));
  expect(Buffer.from(await gm.Body.transformToByteArray()).equals(all.subarray(5 * MIB - 100)), true,
    "SSE-C multipart GetObject Range across the parts");
}

async function main() {
  const s3 = client();
  await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
  const sizes = [5 * MIB, 5 * MIB + 7, 3333];
  await upload(s3, "crc64-full", "CRC64NVME", "FULL_OBJECT", sizes);
  await spoiled("crc64-full", "CRC64NVME");
  await upload(s3, "crc32-full", "CRC32", "FULL_OBJECT", sizes);
  await spoiled("crc32-full", "CRC32");
  await upload(s3, "sha256-composite", "SHA256", "COMPOSITE", sizes.slice(0, 2));
  await sseC(s3);
  console.log("PASS sdk_test.mjs");
}

main().catch((e) => fail(e.stack || String(e)));
