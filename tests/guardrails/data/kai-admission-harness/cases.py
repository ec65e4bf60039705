import json

C=[]
def add(name, ann, sharing=True, **kw):
    d={"name":name,"gpuSharing":sharing,"annotations":ann}; d.update(kw); C.append(d)
for v in ["0.5","5e-1","5E-1","+0.5","500m",".5","0.50","0.999999","0.0001","1e-9","1","1.0","0","0.0","-0.5","NaN","nan","Inf","+Inf","-Inf","infinity","0x1p-1","0.5 "," 0.5","","abc","1/2","0,5","0.5Gi","0.5k","5e-1m","050e-2","0.5e0","1.5","0_5"]:
    add(f"fraction={v!r}", {"gpu-fraction": v})
add("fraction 0.5, gpuSharing=false", {"gpu-fraction":"0.5"}, sharing=False)
add("gpu-memory 2000, gpuSharing=false", {"gpu-memory":"2000"}, sharing=False)
add("no annotations, whole GPU limit 1, gpuSharing=false", {}, sharing=False, gpuLimit="1")
for v in ["2000","1","0","-1","2000Mi","2Gi","2e3","+2000","02000","2000.0","18446744073709551615","18446744073709551616",""]:
    add(f"gpu-memory={v!r}", {"gpu-memory": v})
add("fraction + gpu-memory", {"gpu-fraction":"0.5","gpu-memory":"2000"})
add("fraction + container gpu limit 1", {"gpu-fraction":"0.5"}, gpuLimit="1")
add("fraction + container gpu limit 0", {"gpu-fraction":"0.5"}, gpuLimit="0")
add("fraction + initContainer gpu limit 1", {"gpu-fraction":"0.5"}, initGpuLimit="1")
add("fraction + container gpu request only (no limit)", {"gpu-fraction":"0.5"}, gpuRequestOnly="1")
add("gpu-memory + container gpu limit 1", {"gpu-memory":"2000"}, gpuLimit="1")
add("gpu-memory + initContainer gpu limit 1", {"gpu-memory":"2000"}, initGpuLimit="1")
for v in ["2","1","0","-1","+2","2.0","1e1",""]:
    add(f"fraction 0.5 + num-devices={v!r}", {"gpu-fraction":"0.5","gpu-fraction-num-devices":v})
add("num-devices=2 alone", {"gpu-fraction-num-devices":"2"})
add("num-devices=2 + gpu-memory 2000", {"gpu-memory":"2000","gpu-fraction-num-devices":"2"})
add("num-devices=2 + whole GPU limit 2", {"gpu-fraction-num-devices":"2"}, gpuLimit="2")
add("mps=true without fraction", {"mps":"true"})
add("mps=true without fraction, whole GPU", {"mps":"true"}, gpuLimit="1")
add("mps=True (capital) without fraction", {"mps":"True"})
add("mps=false without fraction", {"mps":"false"})
add("mps=true + fraction", {"mps":"true","gpu-fraction":"0.5"})
add("mps=true + gpu-memory", {"mps":"true","gpu-memory":"2000"})
add("mps=true without fraction, gpuSharing=false", {"mps":"true"}, sharing=False)
add("gpu-fraction-container-name only", {"gpu-fraction-container-name":"nope"})
add("fraction + container-name of missing container", {"gpu-fraction":"0.5","gpu-fraction-container-name":"nope"})
add("whole GPU limit 1 only", {}, gpuLimit="1")
add("initContainer GPU limit 1 only", {}, initGpuLimit="1")
print(json.dumps(C))
