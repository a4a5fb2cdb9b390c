// main.go — the AWS SDK for Go v1 (Debian's golang-github-aws-aws-sdk-go-dev)
// against iolake-aio, built and run by tests/integration/test_sdk_go.py
// beside the v2 program one directory up.
//
// v1 still runs in much deployed Go software. Unlike v2 it signs the
// SHA-256 of every PUT body over plain HTTP (so the gateway checks a
// signed payload hash on each part of a multipart upload) and sends
// "Expect: 100-continue" on bodies over 2 MiB. Prints "ok: WHAT" per
// expectation met, "FAIL: WHAT: ..." otherwise; exits 1 after any failure.
package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	. "sdkcheck"

	"github.com/aws/aws-sdk-go/aws"
	"github.com/aws/aws-sdk-go/aws/awserr"
	"github.com/aws/aws-sdk-go/aws/credentials"
	"github.com/aws/aws-sdk-go/aws/session"
	"github.com/aws/aws-sdk-go/service/s3"
	"github.com/aws/aws-sdk-go/service/s3/s3manager"
)

func code(err error) string {
	if err == nil {
		return "OK"
	}
	if ae, ok := err.(awserr.Error); ok {
		return ae.Code()
	}
	return err.Error()
}

func client(ep, ak, sk string) (*session.Session, *s3.S3) {
	sess := session.Must(session.NewSession(&aws.Config{
		Endpoint:         aws.String(ep),
		Region:           aws.String("us-east-1"),
		Credentials:      credentials.NewStaticCredentials(ak, sk, ""),
		S3ForcePathStyle: aws.Bool(true),
		MaxRetries:       aws.Int(0),
	}))
	return sess, s3.New(sess)
}

func main() {
	ep, ak, sk := os.Getenv("IOLAKE_EP"), os.Getenv("IOLAKE_AK"), os.Getenv("IOLAKE_SK")
	sess, c := client(ep, ak, sk)
	bucket := aws.String("sdk-go-v1")
	_, err := c.CreateBucket(&s3.CreateBucketInput{Bucket: bucket})
	Must(err, "CreateBucket")

	// A 3 MiB PutObject: a signed payload hash and Expect: 100-continue.
	mid := Random(3 << 20)
	p, err := c.PutObject(&s3.PutObjectInput{Bucket: bucket, Key: aws.String("mid"),
		Body: bytes.NewReader(mid), Metadata: map[string]*string{"k": aws.String("v")}})
	Expect(err == nil && strings.Trim(aws.StringValue(p.ETag), `"`) == MD5Hex(mid),
		"PutObject 3 MiB (signed payload, Expect: 100-continue): ETag = MD5", err)
	g, err := c.GetObject(&s3.GetObjectInput{Bucket: bucket, Key: aws.String("mid"),
		Range: aws.String("bytes=1048576-")})
	if err == nil {
		got, _ := io.ReadAll(g.Body)
		g.Body.Close()
		Expect(bytes.Equal(got, mid[1<<20:]) && aws.StringValue(g.Metadata["K"]) == "v",
			"GetObject of an open range, with the metadata")
	} else {
		Expect(false, "GetObject of an open range", err)
	}

	// s3manager: 18 MiB in 5 MiB parts (each part's payload signed), then
	// a parallel ranged download.
	big := Random(18 << 20)
	up := s3manager.NewUploader(sess, func(u *s3manager.Uploader) { u.PartSize = 5 << 20; u.Concurrency = 3 })
	_, err = up.Upload(&s3manager.UploadInput{Bucket: bucket, Key: aws.String("big"),
		Body: bytes.NewReader(big)})
	Expect(err == nil, "s3manager.Uploader: 18 MiB in four signed parts", err)
	buf := aws.NewWriteAtBuffer(make([]byte, 0, len(big)))
	down := s3manager.NewDownloader(sess, func(d *s3manager.Downloader) { d.PartSize = 4 << 20; d.Concurrency = 4 })
	n, err := down.Download(buf, &s3.GetObjectInput{Bucket: bucket, Key: aws.String("big")})
	Expect(err == nil && n == int64(len(big)) && bytes.Equal(buf.Bytes(), big),
		"s3manager.Downloader: parallel ranges, byte for byte", err)

	// ListObjectsPages (v1 listing) over 1,010 keys; batch delete.
	for i := 0; i < 1010; i++ {
		_, err = c.PutObject(&s3.PutObjectInput{Bucket: bucket,
			Key: aws.String(fmt.Sprintf("many/%05d", i)), Body: bytes.NewReader([]byte{byte(i)})})
		Must(err, "PutObject many")
	}
	var keys []*s3.ObjectIdentifier
	pages := 0
	err = c.ListObjectsPages(&s3.ListObjectsInput{Bucket: bucket, Prefix: aws.String("many/")},
		func(p *s3.ListObjectsOutput, last bool) bool {
			pages++
			for _, o := range p.Contents {
				keys = append(keys, &s3.ObjectIdentifier{Key: o.Key})
			}
			return true
		})
	Expect(err == nil && len(keys) == 1010 && pages == 2,
		"ListObjectsPages (ListObjects v1, markers): 1,010 keys in two pages", err, len(keys), pages)
	d, err := c.DeleteObjects(&s3.DeleteObjectsInput{Bucket: bucket,
		Delete: &s3.Delete{Objects: keys[:1000], Quiet: aws.Bool(true)}})
	Expect(err == nil && len(d.Errors) == 0, "DeleteObjects of 1,000 keys (Content-MD5)", err)

	// A presigned PUT, then GET, with net/http.
	req, _ := c.PutObjectRequest(&s3.PutObjectInput{Bucket: bucket, Key: aws.String("presigned")})
	url, err := req.Presign(10 * time.Minute)
	Must(err, "Presign PUT")
	hreq, _ := http.NewRequest(http.MethodPut, url, strings.NewReader("through a presigned PUT"))
	resp, err := http.DefaultClient.Do(hreq)
	Expect(err == nil && resp.StatusCode == 200, "a presigned PUT with net/http", err)
	if resp != nil {
		resp.Body.Close()
	}
	g, err = c.GetObject(&s3.GetObjectInput{Bucket: bucket, Key: aws.String("presigned")})
	if err == nil {
		got, _ := io.ReadAll(g.Body)
		g.Body.Close()
		Expect(string(got) == "through a presigned PUT", "what it PUT reads back")
	} else {
		Expect(false, "what the presigned PUT wrote", err)
	}

	_, err = c.GetObject(&s3.GetObjectInput{Bucket: bucket, Key: aws.String("nope")})
	Expect(code(err) == s3.ErrCodeNoSuchKey, "a missing key: NoSuchKey", err)
	_, bad := client(ep, ak, sk[:len(sk)-1]+"x")
	_, err = bad.PutObject(&s3.PutObjectInput{Bucket: bucket, Key: aws.String("bad"),
		Body: strings.NewReader("x")})
	Expect(code(err) == "SignatureDoesNotMatch", "a wrong secret key: SignatureDoesNotMatch", err)

	Finish("sdk-go-v1")
}
