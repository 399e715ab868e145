package main

// `templatehash [podtemplate|imagepulljobtemplate]` subcommand: kubecontroller.ComputeHash (k8s.io/kubernetes v1.32.10,
// pkg/controller/controller_utils.go), what kruise's Advanced DaemonSet names its revisions by.
// Reads a JSON list of {"template": <PodTemplateSpec>, "collisionCount": n|null} and writes it
// back with "hash" and "printed" (spew's %#v print) filled in.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"os"

	kruise "gofixtures/kruisev1beta1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/rand"
)

type hashFixture struct {
	Name           string          `json:"name"`
	Template       json.RawMessage `json:"template"`
	CollisionCount *int32          `json:"collisionCount"`
	Hash           string          `json:"hash"`
	Printed        string          `json:"printed"`
}

func computeHash(template *v1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	deepHash(h, *template)
	if collisionCount != nil {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint32(b, uint32(*collisionCount))
		h.Write(b)
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

func templateHash(which string) {
	raw, _ := io.ReadAll(os.Stdin)
	var fixtures []hashFixture
	if err := json.Unmarshal(raw, &fixtures); err != nil {
		panic(err)
	}
	for i := range fixtures {
		f := &fixtures[i]
		var b bytes.Buffer
		if which == "imagepulljobtemplate" {
			// kruise's imagelistpulljob refreshJobTemplateHash: no collision count.
			var t kruise.ImagePullJobTemplate
			if err := json.Unmarshal(f.Template, &t); err != nil {
				panic(err)
			}
			h := fnv.New32a()
			deepHash(h, t)
			f.Hash = rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
			deepHash(&b, t)
		} else {
			var t v1.PodTemplateSpec
			if err := json.Unmarshal(f.Template, &t); err != nil {
				panic(err)
			}
			f.Hash = computeHash(&t, f.CollisionCount)
			deepHash(&b, t)
		}
		f.Printed = b.String()
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(fixtures)
}
