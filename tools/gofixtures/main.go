// Command gofixtures computes, with Go and the k8s.io/api version kruise vendors, what kruise
// computes for CloneSet revisions: the ControllerRevision data bytes and name
// (history.HashControllerRevision over kruise's getPatch output, with the collision count) and the
// volume-claim-template hash annotation. It reads the fixture list of
// src/core/rollout/cloneset/revision/go_fixtures.json and writes it back with "name", "data" and
// "vctHash" filled in:
//
//	go run . < ../../src/core/rollout/cloneset/revision/go_fixtures.json > /tmp/out.json
package main

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"sort"
	"strconv"

	"github.com/davecgh/go-spew/spew"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
)

type spec struct {
	Template             v1.PodTemplateSpec         `json:"template"`
	VolumeClaimTemplates []v1.PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty"`
}

type fixture struct {
	CloneSet       string          `json:"cloneset"`
	CollisionCount int32           `json:"collisionCount"`
	Spec           json.RawMessage `json:"spec"`
	Name           string          `json:"name"`
	Data           string          `json:"data"`
	VCTHash        string          `json:"vctHash"`
}

// hashutil.DeepHashObject
func deepHash(hasher io.Writer, obj interface{}) {
	printer := spew.ConfigState{Indent: " ", SortKeys: true, DisableMethods: true, SpewKeys: true}
	printer.Fprintf(hasher, "%#v", obj)
}

// kruise volumeclaimtemplate.PatchVCTemplateHash
func vctHash(templates []v1.PersistentVolumeClaim) string {
	if len(templates) == 0 {
		return ""
	}
	var pvcs []v1.PersistentVolumeClaim
	for i := range templates {
		pvcs = append(pvcs, v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: templates[i].Name}, Spec: templates[i].Spec})
	}
	sort.SliceStable(pvcs, func(i, j int) bool { return pvcs[i].Name < pvcs[j].Name })
	h := fnv.New32a()
	b, _ := json.Marshal(pvcs)
	deepHash(h, b)
	return strconv.FormatUint(uint64(h.Sum32()), 10)
}

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "layout":
			layout(arg(2))
			return
		case "templatehash":
			templateHash(arg(2))
			return
		case "uniteddeployment":
			unitedDeployment()
			return
		}
	}
	raw, _ := io.ReadAll(os.Stdin)
	var fixtures []fixture
	if err := json.Unmarshal(raw, &fixtures); err != nil {
		panic(err)
	}
	for i := range fixtures {
		f := &fixtures[i]
		var s spec
		if err := json.Unmarshal(f.Spec, &s); err != nil {
			panic(err)
		}
		// kruise revision.getPatch: the template through a map, "$patch": "replace".
		tb, _ := json.Marshal(s.Template)
		var tm map[string]interface{}
		_ = json.Unmarshal(tb, &tm)
		tm["$patch"] = "replace"
		data, _ := json.Marshal(map[string]interface{}{"spec": map[string]interface{}{"template": tm}})
		// history.HashControllerRevision
		hf := fnv.New32()
		hf.Write(data)
		hf.Write([]byte(strconv.FormatInt(int64(f.CollisionCount), 10)))
		hash := rand.SafeEncodeString(fmt.Sprint(hf.Sum32()))
		f.Name = f.CloneSet + "-" + hash
		f.Data = string(data)
		f.VCTHash = vctHash(s.VolumeClaimTemplates)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(fixtures)
}

func arg(i int) string {
	if len(os.Args) > i {
		return os.Args[i]
	}
	return ""
}
