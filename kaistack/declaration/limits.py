"""Every size a user controls, bounded before work starts (the README's limits table is this file).

The bounds are far above the largest real clusters (KAI runs 4,000+ nodes and 140,000+ pods) and far
below what would exhaust a CI runner: a bad or hostile input is refused with the key and the limit,
never left to hang, recurse or swap. Scenario limits live with the simulator (placement.scenario),
which imports nothing from kaistack.
"""

from __future__ import annotations

# -- input files ---------------------------------------------------------------------------------
MAX_STACK_FILE_BYTES = 16 * 2**20  # a Pulumi.<stack>.yaml
MAX_MANIFEST_FILE_BYTES = 64 * 2**20  # one file (or stdin) given to `kaistack lint`
MAX_SCENARIO_FILE_BYTES = 256 * 2**20  # a scenario for `kaistack simulate` (JSON for the large ones)
MAX_JSON_DUMP_BYTES = (
    256 * 2**20
)  # a `kubectl get -o json` dump for `kaistack diagnose` (YAML ones: the manifest limit)
MAX_KUBECONFIG_BYTES = 16 * 2**20  # a kubeconfig file (certificates inline included)
MAX_SMALL_FILE_BYTES = 1 * 2**20  # Pulumi.yaml, PulumiPolicy.yaml, the JSON Schema `schema --check` compares
MAX_DOCUMENTS = 20_000  # YAML documents in one file
MAX_DEPTH = 100  # nesting of mappings/sequences in any YAML or JSON input (CRD schemas reach ~40)
MAX_ALIAS_EXPANSION = 1_000_000  # nodes reachable through YAML aliases (anchors) in one document
# Values (scalars, mappings, lists) in one input, all its documents together: the byte limits alone let a file
# of `{}`s build tens of millions of objects (12 GB from a 249 MB scenario). PyYAML holds ~700 bytes a value
# while it reads (1M values: 0.7 GB, 12 s), json ~150 at worst; busy-L.json (140,000 pods) has 740,000.
MAX_YAML_VALUES = 1_500_000
MAX_JSON_VALUES = 5_000_000

# -- the declaration -----------------------------------------------------------------------------
MAX_NODE_POOLS = 1_000
MAX_NODES = 20_000  # sum of every pool's count (and maxSize)
MAX_GPUS_PER_NODE = 128
MAX_QUEUES = 10_000
MAX_QUEUE_DEPTH = 32  # parent chain length from a top-level queue
MAX_TENANTS = 1_000
MAX_WORKLOADS = 20_000
MAX_REPLICAS = 100_000  # pods of one workload (replicas, PyTorchJob workers)
MAX_PODS = 500_000  # pods of all workloads together
MAX_LIST_ITEMS = 1_000  # command, args, env, ports, labels, annotations, taints of one object
MAX_STRING = 4_096  # any one string value (images, URLs, commands)
