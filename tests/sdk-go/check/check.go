// Package check — what the Go SDK test programs (tests/sdk-go/main.go,
// tests/sdk-go/v1/main.go) share: expectations printed as they are met
// or not, random bodies, MD5s. Built as the GOPATH package "sdkcheck" by
// tests/integration/test_sdk_go.py.
package sdkcheck

import (
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
)

var failed int

// Expect prints "ok: WHAT" when ok, else "FAIL: WHAT detail" and counts it.
func Expect(ok bool, what string, detail ...interface{}) {
	if ok {
		fmt.Println("ok:", what)
		return
	}
	failed++
	fmt.Println("FAIL:", what, fmt.Sprint(detail...))
}

// Must ends the program at an error a later step cannot do without.
func Must(err error, what string) {
	if err != nil {
		fmt.Println("FAIL:", what, err)
		os.Exit(1)
	}
}

// Finish exits 1 after any failed expectation, else prints PASS name.
func Finish(name string) {
	if failed > 0 {
		fmt.Printf("%d failures\n", failed)
		os.Exit(1)
	}
	fmt.Println("PASS", name)
}

// Random returns n random bytes.
func Random(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return b
}

// MD5Hex is b's MD5 in lower-case hex (an S3 ETag without quotes).
func MD5Hex(b []byte) string {
	s := md5.Sum(b)
	return hex.EncodeToString(s[:])
}
