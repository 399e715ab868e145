package main

// `uniteddeployment` subcommand: what kruise v1.9.0 names a UnitedDeployment's revisions by.
// getUnitedDeploymentPatch (pkg/controller/uniteddeployment/revision.go) encodes the
// UnitedDeployment, decodes it into a map[string]interface{}, keeps spec.template with
// "$patch": "replace" and encodes {"spec":{"template":…}}; newRevision hashes those bytes with
// history.HashControllerRevision and the collision count (always given: status.collisionCount or
// 0). Only spec.template reaches the bytes, so the fixture holds just that. Reads a JSON list of
// {"case", "ud", "collisionCount", "template"} and writes it back with "name" and "data":
//
//	go run . uniteddeployment < ../../src/core/uniteddeployment/go_fixtures.json > /tmp/out.json

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"strconv"

	kruise "gofixtures/kruisev1alpha1"
	"k8s.io/apimachinery/pkg/util/rand"
)

type udFixture struct {
	Case           string          `json:"case"`
	UD             string          `json:"ud"`
	CollisionCount int32           `json:"collisionCount"`
	Template       json.RawMessage `json:"template"`
	Name           string          `json:"name"`
	Data           string          `json:"data"`
}

type udSpec struct {
	Template kruise.SubsetTemplate `json:"template"`
}

type ud struct {
	Spec udSpec `json:"spec"`
}

func unitedDeployment() {
	raw, _ := io.ReadAll(os.Stdin)
	var fixtures []udFixture
	if err := json.Unmarshal(raw, &fixtures); err != nil {
		panic(err)
	}
	for i := range fixtures {
		f := &fixtures[i]
		var u ud
		if err := json.Unmarshal(f.Template, &u.Spec.Template); err != nil {
			panic(fmt.Sprintf("%s: %v", f.Case, err))
		}
		// getUnitedDeploymentPatch
		b, err := json.Marshal(u)
		if err != nil {
			panic(err)
		}
		var m map[string]interface{}
		if err := json.Unmarshal(b, &m); err != nil {
			panic(err)
		}
		template := m["spec"].(map[string]interface{})["template"].(map[string]interface{})
		template["$patch"] = "replace"
		data, err := json.Marshal(map[string]interface{}{"spec": map[string]interface{}{"template": template}})
		if err != nil {
			panic(err)
		}
		// history.HashControllerRevision, history.ControllerRevisionName
		hf := fnv.New32()
		hf.Write(data)
		hf.Write([]byte(strconv.FormatInt(int64(f.CollisionCount), 10)))
		f.Name = f.UD + "-" + rand.SafeEncodeString(fmt.Sprint(hf.Sum32()))
		f.Data = string(data)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(fixtures)
}
