// main.go — the AWS SDK for Go v2 (Debian's golang-github-aws-aws-sdk-go-v2-dev)
// against iolake-aio, built and run by tests/integration/test_sdk_go.py.
//
// The client is the SDK's default one, given only an endpoint, a region,
// static keys and path-style addressing: what a Go service does. Prints
// "ok: WHAT" per expectation met, "FAIL: WHAT: ..." otherwise, and exits 1
// after any failure.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	. "sdkcheck"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

func client(ep, ak, sk string) *s3.Client {
	return s3.New(s3.Options{
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider(ak, sk, ""),
		EndpointResolver: s3.EndpointResolverFromURL(ep),
		UsePathStyle:     true,
		RetryMaxAttempts: 1,
	})
}

func code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	if err == nil {
		return "OK"
	}
	return err.Error()
}

func main() {
	ep, ak, sk := os.Getenv("IOLAKE_EP"), os.Getenv("IOLAKE_AK"), os.Getenv("IOLAKE_SK")
	ctx := context.Background()
	c := client(ep, ak, sk)
	bucket := aws.String("sdk-go")

	_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: bucket})
	Must(err, "CreateBucket")

	// PutObject with metadata, a content type and a CRC32 checksum the
	// SDK computes (flexible checksums).
	small := Random(5000)
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String("dir/small"),
		Body: bytes.NewReader(small), ContentType: aws.String("text/x-test"),
		Metadata:          map[string]string{"color": "blue"},
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32})
	Expect(err == nil, "PutObject with metadata and a CRC32 checksum", err)
	h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: bucket, Key: aws.String("dir/small")})
	Expect(err == nil && h.ContentLength == 5000 && aws.ToString(h.ContentType) == "text/x-test" &&
		h.Metadata["color"] == "blue" && strings.Trim(aws.ToString(h.ETag), `"`) == MD5Hex(small),
		"HeadObject: length, type, metadata, ETag = MD5", err)
	g, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: bucket, Key: aws.String("dir/small"),
		ChecksumMode: types.ChecksumModeEnabled})
	if err == nil {
		var got []byte
		got, err = io.ReadAll(g.Body)
		g.Body.Close()
		Expect(err == nil && bytes.Equal(got, small) && aws.ToString(g.ChecksumCRC32) != "",
			"GetObject with ChecksumMode ENABLED: the SDK validated the CRC32", err)
	} else {
		Expect(false, "GetObject with ChecksumMode", err)
	}
	g, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: bucket, Key: aws.String("dir/small"),
		Range: aws.String("bytes=100-199")})
	if err == nil {
		got, _ := io.ReadAll(g.Body)
		g.Body.Close()
		Expect(bytes.Equal(got, small[100:200]) && aws.ToString(g.ContentRange) == "bytes 100-199/5000",
			"GetObject with a Range")
	} else {
		Expect(false, "GetObject with a Range", err)
	}
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: bucket, Key: aws.String("nope")})
	var nsk *types.NoSuchKey
	Expect(errors.As(err, &nsk), "GetObject of a missing key: the SDK's NoSuchKey type", err)
	// This SDK has no type for HeadObject's 404: the code, as from AWS.
	_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: bucket, Key: aws.String("nope")})
	Expect(code(err) == "NotFound", "HeadObject of a missing key: 404 NotFound", err)

	// The transfer manager: a 21 MiB body in 5 MiB parts, 3 at a time,
	// and a download in parallel ranges.
	big := Random(21 << 20)
	up := manager.NewUploader(c, func(u *manager.Uploader) { u.PartSize = 5 << 20; u.Concurrency = 3 })
	res, err := up.Upload(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String("big"),
		Body: bytes.NewReader(big)})
	Expect(err == nil && strings.HasSuffix(aws.ToString(res.ETag), `-5"`),
		"manager.Uploader: 21 MiB in five parts", err)
	buf := manager.NewWriteAtBuffer(make([]byte, 0, len(big)))
	down := manager.NewDownloader(c, func(d *manager.Downloader) { d.PartSize = 4 << 20; d.Concurrency = 4 })
	n, err := down.Download(ctx, buf, &s3.GetObjectInput{Bucket: bucket, Key: aws.String("big")})
	Expect(err == nil && n == int64(len(big)) && bytes.Equal(buf.Bytes(), big),
		"manager.Downloader: parallel ranges, byte for byte", err)

	// CopyObject, then 1,100 keys listed by the paginator and deleted
	// with DeleteObjects (the SDK sends Content-MD5).
	_, err = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: bucket, Key: aws.String("big-copy"),
		CopySource: aws.String("sdk-go/big")})
	Expect(err == nil, "CopyObject of the multipart object", err)
	h, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: bucket, Key: aws.String("big-copy")})
	Expect(err == nil && h.ContentLength == int64(len(big)), "the copy's length", err)
	for i := 0; i < 1100; i++ {
		_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket,
			Key: aws.String(fmt.Sprintf("many/%05d", i)), Body: bytes.NewReader([]byte{byte(i)})})
		if err != nil {
			Must(err, "PutObject many")
		}
	}
	var keys []string
	pg := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: bucket,
		Prefix: aws.String("many/")})
	pages := 0
	for pg.HasMorePages() {
		p, err := pg.NextPage(ctx)
		Must(err, "ListObjectsV2 page")
		pages++
		for _, o := range p.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	Expect(len(keys) == 1100 && pages == 2 && sort.StringsAreSorted(keys),
		"ListObjectsV2Paginator: 1,100 keys in two pages, in order", len(keys), " ", pages)
	var objs []types.ObjectIdentifier
	for _, k := range keys[:1000] {
		objs = append(objs, types.ObjectIdentifier{Key: aws.String(k)})
	}
	d, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: bucket,
		Delete: &types.Delete{Objects: objs, Quiet: true}})
	Expect(err == nil && len(d.Errors) == 0, "DeleteObjects of 1,000 keys", err)
	l, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: bucket, Prefix: aws.String("many/")})
	Expect(err == nil && len(l.Contents) == 100, "100 keys left", err)

	// Versioning.
	_, err = c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: bucket,
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}})
	Expect(err == nil, "PutBucketVersioning Enabled", err)
	var vids []string
	for _, body := range []string{"one", "two"} {
		p, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String("v"),
			Body: strings.NewReader(body)})
		Must(err, "PutObject versioned")
		vids = append(vids, aws.ToString(p.VersionId))
	}
	g, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: bucket, Key: aws.String("v"), VersionId: aws.String(vids[0])})
	if err == nil {
		got, _ := io.ReadAll(g.Body)
		g.Body.Close()
		Expect(string(got) == "one" && vids[0] != vids[1], "GetObject of the older version")
	} else {
		Expect(false, "GetObject of the older version", err)
	}
	lv, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: bucket, Prefix: aws.String("v")})
	Expect(err == nil && len(lv.Versions) == 2, "ListObjectVersions: two", err)

	// A presigned GET, fetched with net/http.
	ps := s3.NewPresignClient(c)
	preq, err := ps.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: bucket, Key: aws.String("dir/small")},
		s3.WithPresignExpires(10*time.Minute))
	Must(err, "PresignGetObject")
	resp, err := http.Get(preq.URL)
	if err == nil {
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		Expect(resp.StatusCode == 200 && bytes.Equal(got, small), "a presigned GET with net/http")
	} else {
		Expect(false, "a presigned GET", err)
	}

	// Refusals the SDK maps to typed or coded errors.
	bad := client(ep, ak, sk[:len(sk)-1]+"x")
	_, err = bad.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String("bad"),
		Body: strings.NewReader("x")})
	Expect(code(err) == "SignatureDoesNotMatch", "a wrong secret key: SignatureDoesNotMatch", err)
	_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: bucket, Key: aws.String("bad")})
	Expect(code(err) == "NotFound", "and nothing written", err)
	_, err = c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: bucket})
	var owned *types.BucketAlreadyOwnedByYou
	Expect(errors.As(err, &owned), "CreateBucket again: BucketAlreadyOwnedByYou", err)

	Finish("sdk-go-v2")
}
