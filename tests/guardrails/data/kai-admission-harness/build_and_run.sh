#!/usr/bin/env bash
# Rebuilds the admission harness against upstream sources read from the local mirrors (nothing is vendored here).
# Needs: Debian golang-go (1.19 ok) and golang-gopkg-inf.v0-dev; mirrors fetched with the `fetch` tool:
#   /work/.mirror/kai-scheduler+KAI-Scheduler/repo and /work/.mirror/kubernetes+apimachinery/repo
# Usage: build_and_run.sh <kai-ref, e.g. v0.17.0>   -> prints JSON results
set -euo pipefail
REF=${1:-v0.17.0}; HERE=$(cd "$(dirname "$0")" && pwd); H=$(mktemp -d)
KAI=/work/.mirror/kai-scheduler+KAI-Scheduler/repo; AM=/work/.mirror/kubernetes+apimachinery/repo
AMREF=$(git -C $KAI show $REF:go.mod | awk '/^replace k8s.io\/apimachinery/{print $NF}'); AMREF=${AMREF:-v0.35.4}
mkdir -p $H/{am/pkg/api/resource,api/core/v1,inf,main} $H/kai/pkg/common/{constants,resources} $H/kai/pkg/binder/plugins/gpusharing/gpu-request
for f in amount.go math.go quantity.go scale_int.go suffix.go; do git -C $AM show $AMREF:pkg/api/resource/$f > $H/am/pkg/api/resource/$f; done
python3 - "$H/am/pkg/api/resource/quantity.go" <<'PY'
import re,sys
p=sys.argv[1]; s=open(p).read()
s=re.sub(r'\tcbor "[^"]+"\n','',s)
s=re.sub(r'func \(q Quantity\) MarshalCBOR\(\).*?\n}\n','',s,flags=re.S)
s=re.sub(r'func \(q \*Quantity\) UnmarshalCBOR\(value \[\]byte\) error \{.*?\n}\n','',s,flags=re.S)
open(p,'w').write(s)
PY
cp /usr/share/gocode/src/gopkg.in/inf.v0/*.go $H/inf/; rm -f $H/inf/*_test.go; echo 'module gopkg.in/inf.v0' > $H/inf/go.mod
printf 'module k8s.io/apimachinery\ngo 1.19\nrequire gopkg.in/inf.v0 v0.9.1\nreplace gopkg.in/inf.v0 => ../inf\n' > $H/am/go.mod
cp $HERE/corev1_stub.go $H/api/core/v1/types.go
printf 'module k8s.io/api\ngo 1.19\nrequire k8s.io/apimachinery v0.0.0\nreplace k8s.io/apimachinery => ../am\nreplace gopkg.in/inf.v0 => ../inf\n' > $H/api/go.mod
git -C $KAI show $REF:pkg/common/constants/constants.go > $H/kai/pkg/common/constants/constants.go
git -C $KAI show $REF:pkg/common/resources/gpu_sharing.go > $H/kai/pkg/common/resources/gpu_sharing.go
git -C $KAI show $REF:pkg/binder/plugins/gpusharing/gpu-request/gpu_request_validator.go > $H/kai/pkg/binder/plugins/gpusharing/gpu-request/gpu_request_validator.go
printf 'module github.com/kai-scheduler/KAI-scheduler\ngo 1.19\nrequire (\n k8s.io/api v0.0.0\n k8s.io/apimachinery v0.0.0\n)\nreplace k8s.io/api => ../api\nreplace k8s.io/apimachinery => ../am\nreplace gopkg.in/inf.v0 => ../inf\n' > $H/kai/go.mod
cp $HERE/main.go $H/main/main.go
printf 'module harness\ngo 1.19\nrequire (\n github.com/kai-scheduler/KAI-scheduler v0.0.0\n k8s.io/api v0.0.0\n k8s.io/apimachinery v0.0.0\n)\nreplace github.com/kai-scheduler/KAI-scheduler => ../kai\nreplace k8s.io/api => ../api\nreplace k8s.io/apimachinery => ../am\nreplace gopkg.in/inf.v0 => ../inf\n' > $H/main/go.mod
(cd $H/main && GOFLAGS=-mod=mod GOPROXY=off go build -o $H/validate .)
python3 $HERE/cases.py | $H/validate
