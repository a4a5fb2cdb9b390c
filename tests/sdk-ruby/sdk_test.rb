# sdk_test.rb — the AWS SDK for Ruby v3 (Debian's ruby-aws-sdk-s3) against
# iolake-aio, run by tests/integration/test_sdk_ruby.py.
#
# The client is the SDK's default one, given only an endpoint, a region,
# static keys and path-style addressing. Prints "ok: WHAT" per expectation
# met, "FAIL: WHAT: ..." otherwise, and exits 1 after any failure.
require "aws-sdk-s3"
require "digest"
require "net/http"
require "securerandom"
require "tempfile"

$failed = 0

def expect(ok, what, detail = nil)
  if ok
    puts "ok: #{what}"
  else
    $failed += 1
    puts "FAIL: #{what} #{detail.inspect}"
  end
end

def code(&blk)
  blk.call
  "OK"
rescue Aws::S3::Errors::ServiceError => e
  e.code
end

def client(sk)
  Aws::S3::Client.new(endpoint: ENV.fetch("IOLAKE_EP"), region: "us-east-1",
                      access_key_id: ENV.fetch("IOLAKE_AK"), secret_access_key: sk,
                      force_path_style: true, retry_limit: 0)
end

s3 = client(ENV.fetch("IOLAKE_SK"))
bucket = "sdk-ruby"
s3.create_bucket(bucket: bucket)

# put_object with metadata and a CRC32 checksum the SDK computes; get it
# back with checksum validation.
small = SecureRandom.random_bytes(7000)
s3.put_object(bucket: bucket, key: "small", body: small, content_type: "text/x-test",
              metadata: { "color" => "green" }, checksum_algorithm: "CRC32")
h = s3.head_object(bucket: bucket, key: "small")
expect(h.content_length == 7000 && h.content_type == "text/x-test" &&
       h.metadata["color"] == "green" && h.etag.delete('"') == Digest::MD5.hexdigest(small),
       "put_object / head_object: length, type, metadata, ETag = MD5", h.to_h)
g = s3.get_object(bucket: bucket, key: "small", checksum_mode: "ENABLED")
validated = g.context[:http_checksum] && g.context[:http_checksum][:validated]
expect(g.body.read.b == small && validated == "CRC32",
       "get_object with checksum_mode ENABLED: the SDK validated the CRC32", validated)
g = s3.get_object(bucket: bucket, key: "small", range: "bytes=10-19")
expect(g.body.read.b == small[10, 10] && g.content_range == "bytes 10-19/7000", "a ranged get_object")
expect(code { s3.get_object(bucket: bucket, key: "nope") } == "NoSuchKey", "get_object of a missing key")
expect(code { s3.head_object(bucket: bucket, key: "nope") } == "NotFound", "head_object of a missing key")

# Aws::S3::Object#upload_file: a 20 MiB file in 5 MiB parts on threads;
# download_file in parallel ranges; a multipart server-side copy.
big = SecureRandom.random_bytes(20 << 20)
Tempfile.create("big") do |f|
  f.binmode
  f.write(big)
  f.flush
  obj = Aws::S3::Resource.new(client: s3).bucket(bucket).object("big")
  ok = obj.upload_file(f.path, multipart_threshold: 5 << 20, thread_count: 3)
  expect(ok && obj.etag.end_with?('-4"'), "upload_file: 20 MiB in four parts", obj.etag)
end
Tempfile.create("down") do |f|
  obj = Aws::S3::Resource.new(client: s3).bucket(bucket).object("big")
  obj.download_file(f.path, mode: "get_range", chunk_size: 4 << 20, thread_count: 4)
  expect(File.binread(f.path).b == big, "download_file in 4 MiB ranges on threads: byte for byte")
end
src = Aws::S3::Resource.new(client: s3).bucket(bucket).object("big")
src.copy_to({ bucket: bucket, key: "big-copy" }, multipart_copy: true, min_part_size: 5 << 20)
g = s3.get_object(bucket: bucket, key: "big-copy")
expect(g.body.read.b == big, "copy_to with multipart_copy (UploadPartCopy): byte for byte")

# 1,050 keys: list_objects_v2 pages, delete_objects (Content-MD5).
1050.times { |i| s3.put_object(bucket: bucket, key: format("many/%05d", i), body: i.to_s) }
keys = []
pages = 0
s3.list_objects_v2(bucket: bucket, prefix: "many/").each_page do |p|
  pages += 1
  keys.concat(p.contents.map(&:key))
end
expect(keys.size == 1050 && pages == 2 && keys == keys.sort, "list_objects_v2: 1,050 keys, two pages",
       [keys.size, pages])
r = s3.delete_objects(bucket: bucket, delete: { objects: keys.first(1000).map { |k| { key: k } }, quiet: true })
expect(r.errors.empty?, "delete_objects of 1,000 keys", r.errors)
expect(s3.list_objects_v2(bucket: bucket, prefix: "many/").key_count == 50, "50 keys left")

# A presigned GET through Net::HTTP.
url = Aws::S3::Presigner.new(client: s3).presigned_url(:get_object, bucket: bucket, key: "small",
                                                          expires_in: 600)
resp = Net::HTTP.get_response(URI(url))
expect(resp.code == "200" && resp.body.b == small, "a presigned GET with Net::HTTP", resp.code)

# Tagging and versions.
s3.put_object_tagging(bucket: bucket, key: "small",
                      tagging: { tag_set: [{ key: "team", value: "storage" }] })
t = s3.get_object_tagging(bucket: bucket, key: "small").tag_set
expect(t.size == 1 && t[0].key == "team" && t[0].value == "storage", "object tagging")
s3.put_bucket_versioning(bucket: bucket, versioning_configuration: { status: "Enabled" })
v1 = s3.put_object(bucket: bucket, key: "v", body: "one").version_id
s3.put_object(bucket: bucket, key: "v", body: "two")
expect(s3.get_object(bucket: bucket, key: "v", version_id: v1).body.read.b == "one" &&
       s3.get_object(bucket: bucket, key: "v").body.read.b == "two", "versions: the old and the current")

bad = client(ENV.fetch("IOLAKE_SK")[0..-2] + "x")
expect(code { bad.put_object(bucket: bucket, key: "bad", body: "x") } == "SignatureDoesNotMatch",
       "a wrong secret key: SignatureDoesNotMatch")
expect(code { s3.head_object(bucket: bucket, key: "bad") } == "NotFound", "and nothing written")

if $failed > 0
  puts "#{$failed} failures"
  exit 1
end
puts "PASS sdk-ruby"
