"""EC2, asked read-only about instance types and zones: `Ec2` answers, `InstanceFacts` is one type's answer.

Credential and network trouble becomes `AwsUnavailable` (resolution then uses the declared values);
other API errors keep their code. Short timeouts and few retries: `render`/`check` must not hang on a
machine with no network.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

# Kubelet's default hard eviction threshold on the EKS AMIs (memory.available<100Mi).
EVICTION_HARD_MIB = 100


# What the user can do about each way AWS cannot be asked; the fallback's errors end with it.
GIVE_CREDENTIALS = "give AWS credentials (aws configure / AWS_PROFILE)"
FIX_SETTINGS = "fix the AWS settings (profile, config file, region, endpoint_url)"
ALLOW_CALLS = (
    "give valid AWS credentials allowed ec2:DescribeInstanceTypes, ec2:DescribeInstanceTypeOfferings and "
    "ec2:DescribeAvailabilityZones"
)
RUN_AGAIN = "run again when EC2 answers"
REACH_EC2 = "run again where EC2's endpoint can be reached (network, proxy, endpoint_url)"


class AwsUnavailable(Exception):
    """AWS cannot be asked (no credentials, no network, not authorized): use the declared values.

    `remedy` says what would let kaistack ask (one of the constants above).
    """

    def __init__(self, message: str, remedy: str = GIVE_CREDENTIALS) -> None:
        super().__init__(message)
        self.remedy = remedy


@dataclass(frozen=True)
class InstanceFacts:
    """What EC2 says about one instance type, plus the EKS AMI's allocatable estimate."""

    instance_type: str
    vcpus: int
    memory_mib: int
    architectures: tuple[str, ...]
    gpus: int = 0
    gpu_name: str | None = None
    gpu_manufacturer: str | None = None
    gpu_memory_mib: int | None = None
    # Below 1 for a slice of one GPU (g6f: 0.125 of an L4), which EC2 counts as 0 GPUs.
    gpu_partition: float = 1.0
    max_enis: int = 0
    ipv4_per_eni: int = 0

    @property
    def gpu_product(self) -> str | None:
        """The GFD-style product (`NVIDIA-L4`), so the label matches what GFD writes later."""
        if not self.gpu_name:
            return None
        name = re.sub(r"\s+", "-", self.gpu_name.strip())
        maker = (self.gpu_manufacturer or "").strip()
        return name if not maker or name.upper().startswith(maker.upper()) else f"{maker}-{name}"

    @property
    def max_pods(self) -> int:
        """EKS's max-pods for the VPC CNI without prefix delegation, capped like max-pods-calculator.sh.

        ENIs x (IPv4 per ENI - 1) + 2 (awslabs/amazon-eks-ami `eni-max-pods.txt` formula); the
        calculator recommends at most 110 pods below 30 vCPUs and 250 above.
        """
        by_eni = self.max_enis * (self.ipv4_per_eni - 1) + 2 if self.max_enis else 110
        return max(1, min(by_eni, 110 if self.vcpus < 30 else 250))

    @property
    def allocatable_cpu_millis(self) -> int:
        """vCPUs minus the EKS AMI's kube-reserved CPU: 6% of core 1, 1% of core 2, 0.5% of cores 3-4, 0.25% after."""
        reserved = Decimal(0)
        for core in range(1, self.vcpus + 1):
            reserved += Decimal(60 if core == 1 else 10 if core == 2 else 5 if core <= 4 else "2.5")
        return self.vcpus * 1000 - int(reserved.to_integral_value(rounding="ROUND_CEILING"))

    @property
    def allocatable_memory_mib(self) -> int:
        """Memory minus the EKS AMI's kube-reserved (11 MiB x max pods + 255 MiB) and the eviction threshold."""
        return self.memory_mib - (11 * self.max_pods + 255) - EVICTION_HARD_MIB


def _default_client(region: str) -> Any:
    import boto3
    from botocore.config import Config

    # A missing profile or an unreadable config file fails here already; like a call's failure, it is AWS being
    # unavailable, not a kaistack bug.
    session = call(boto3.session.Session, region_name=region)
    # Checked up front so a machine without credentials falls back at once, without a signed call. Resolving
    # them can run a credential_process or an SSO refresh, which fail like a call does, or (botocore parses a
    # credential_process's output unguarded) with a JSON or type error.
    try:
        credentials = call(session.get_credentials)
    except (ValueError, KeyError, TypeError) as err:
        raise AwsUnavailable(f"AWS credentials could not be read ({type(err).__name__}; not shown)") from err
    if credentials is None:
        raise AwsUnavailable("no AWS credentials found")
    # Short timeouts and few retries: render/check must not hang on a machine with no network.
    settings = Config(connect_timeout=5, read_timeout=15, retries={"max_attempts": 2, "mode": "standard"})
    try:
        # An endpoint URL or an STS setting in the environment or the config file is read here.
        return call(session.client, service_name="ec2", config=settings)
    except ValueError as err:
        # Not quoted: an endpoint URL may carry credentials.
        raise AwsUnavailable(
            f"AWS settings could not be used ({type(err).__name__} building the EC2 client; check endpoint_url / "
            "AWS_ENDPOINT_URL*)",
            FIX_SETTINGS,
        ) from err


class Ec2:
    """One resolution's view of EC2: the client (built on first use) and what it has answered so far.

    Each instance type is asked about once per resolution, however many pools name it.
    """

    def __init__(self, client: Any, region: str) -> None:
        self._client = client
        self.region = region
        self._facts: dict[str, InstanceFacts | None] = {}
        self._offers: dict[str, frozenset[str]] = {}

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = _default_client(self.region)
        return self._client

    def describe(self, instance_type: str) -> InstanceFacts | None:
        if instance_type not in self._facts:
            self._facts[instance_type] = self._describe(instance_type)
        return self._facts[instance_type]

    def _describe(self, instance_type: str) -> InstanceFacts | None:
        # One call per type: AWS fails the whole request when any listed type is unknown, so asking for
        # each separately tells which pool named the bad one.
        try:
            response = call(self.client.describe_instance_types, InstanceTypes=[instance_type])
        except ClientCodeError as err:
            if err.code in ("InvalidInstanceType", "InvalidParameterValue"):
                return None
            raise
        items = response.get("InstanceTypes") or []
        return _facts_from(items[0]) if items else None

    def offered_zones(self, instance_type: str) -> frozenset[str]:
        if instance_type not in self._offers:
            zones: set[str] = set()
            kwargs: dict[str, Any] = {
                "LocationType": "availability-zone",
                "Filters": [{"Name": "instance-type", "Values": [instance_type]}],
            }
            while True:
                response = call(self.client.describe_instance_type_offerings, **kwargs)
                zones.update(o["Location"] for o in response.get("InstanceTypeOfferings", []))
                token = response.get("NextToken")
                if not token:
                    break
                kwargs["NextToken"] = token
            self._offers[instance_type] = frozenset(zones)
        return self._offers[instance_type]

    def available_zones(self) -> set[str]:
        response = call(
            self.client.describe_availability_zones,
            Filters=[
                {"Name": "zone-type", "Values": ["availability-zone"]},
                {"Name": "state", "Values": ["available"]},
            ],
        )
        return {z["ZoneName"] for z in response.get("AvailabilityZones", [])}


class ClientCodeError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


_UNAVAILABLE_CODES = frozenset(
    {
        "AuthFailure",
        "UnauthorizedOperation",
        "InvalidClientTokenId",
        "ExpiredToken",
        "RequestExpired",
        "SignatureDoesNotMatch",
        "OptInRequired",
    }
)


# botocore@1.44.8 retries/standard.py: TransientRetryableChecker (:464-469) and ThrottledRetryableChecker's codes
# (:510-525), and ThrottlingStatusCodeChecker's 429.
_BUSY_CODES = frozenset(
    {
        "RequestTimeout",
        "RequestTimeoutException",
        "PriorRequestNotComplete",
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottledException",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "BandwidthLimitExceeded",
        "RequestThrottled",
        "SlowDown",
        "EC2ThrottledException",
        "ServiceUnavailable",
        "Unavailable",
        "InternalError",
        "InternalFailure",
    }
)
_BUSY_STATUSES = frozenset({429, 500, 502, 503, 504})


def call(method: Any, **kwargs: Any) -> Any:
    """One EC2 call; credential and network trouble becomes AwsUnavailable, API errors keep their code."""
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        ConfigParseError,
        ConnectionClosedError,
        ConnectionError,
        HTTPClientError,
        NoCredentialsError,
        NoRegionError,
        PartialCredentialsError,
        ProfileNotFound,
        ReadTimeoutError,
    )

    try:
        return method(**kwargs)
    except (NoCredentialsError, PartialCredentialsError) as err:
        raise AwsUnavailable(f"no usable AWS credentials ({err})") from err
    except NoRegionError as err:
        raise AwsUnavailable(f"no AWS region ({err})", FIX_SETTINGS) from err
    except ClientError as err:
        error = err.response.get("Error", {})
        code = str(error.get("Code", ""))
        if code in _UNAVAILABLE_CODES:
            raise AwsUnavailable(
                f"AWS refused {err.operation_name} ({code}: {error.get('Message', '')})", ALLOW_CALLS
            ) from err
        status = err.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if code in _BUSY_CODES or status in _BUSY_STATUSES:
            # What botocore retries (retries/standard.py), still failing after its attempts: AWS is busy, not wrong.
            raise AwsUnavailable(
                f"AWS did not answer {err.operation_name} ({code or 'HTTP ' + str(status)})", RUN_AGAIN
            ) from err
        raise ClientCodeError(code, str(err)) from err
    except (ConnectionError, ReadTimeoutError, ConnectionClosedError) as err:
        # An endpoint, a TLS error, or a proxy botocore masked: nothing secret.
        raise AwsUnavailable(f"AWS is unreachable ({err})", REACH_EC2) from err
    except HTTPClientError as err:
        # Any other exception of the HTTP client, wrapped whole: urllib3's LocationParseError quotes a proxy URL
        # with its password (botocore masks only ProxyError). The wrapped exception's class says enough.
        wrapped = type(err.kwargs.get("error")).__name__
        raise AwsUnavailable(
            f"AWS is unreachable ({type(err).__name__}: {wrapped}; its message is not shown)", REACH_EC2
        ) from err
    except (ProfileNotFound, ConfigParseError) as err:  # a profile's name, a config file's path
        raise AwsUnavailable(f"AWS settings could not be used ({err})", FIX_SETTINGS) from err
    except BotoCoreError as err:
        # CredentialRetrievalError carries a credential_process's stderr whole, SSO and login errors a token
        # cache's complaint: the class says enough, the text may hold a secret.
        raise AwsUnavailable(
            f"AWS credentials or settings could not be used ({type(err).__name__}; its message is not shown, "
            "as it can carry a credential helper's output)"
        ) from err


def _facts_from(item: Mapping[str, Any]) -> InstanceFacts:
    gpu_info = item.get("GpuInfo") or {}
    gpus = gpu_info.get("Gpus") or []
    first = gpus[0] if gpus else {}
    network = item.get("NetworkInfo") or {}
    return InstanceFacts(
        instance_type=item["InstanceType"],
        vcpus=int(item["VCpuInfo"]["DefaultVCpus"]),
        memory_mib=int(item["MemoryInfo"]["SizeInMiB"]),
        architectures=tuple((item.get("ProcessorInfo") or {}).get("SupportedArchitectures") or ("x86_64",)),
        gpus=sum(int(g.get("Count", 0)) for g in gpus),
        gpu_name=first.get("Name"),
        gpu_manufacturer=first.get("Manufacturer"),
        gpu_memory_mib=(first.get("MemoryInfo") or {}).get("SizeInMiB"),
        gpu_partition=float(first.get("GpuPartitionSize") or 1.0),
        max_enis=_pod_enis(network),
        ipv4_per_eni=int(network.get("Ipv4AddressesPerInterface") or 0),
    )


def _pod_enis(network: dict[str, Any]) -> int:
    """The ENIs pods get: the default network card's only. MaximumNetworkInterfaces counts every card (p5.48xlarge:
    32 over 32 cards, 2 on the default), and the VPC CNI puts pods on the default one
    (awslabs/amazon-eks-ami@v20250103:templates/al2/runtime/max-pods-calculator.sh L125-127, which indexes
    NetworkCards by DefaultNetworkCardIndex; eni-max-pods.txt: p5.48xlarge 100)."""
    cards = network.get("NetworkCards") or []
    index = network.get("DefaultNetworkCardIndex") or 0
    if isinstance(index, int) and 0 <= index < len(cards) and cards[index].get("MaximumNetworkInterfaces"):
        return int(cards[index]["MaximumNetworkInterfaces"])
    return int(network.get("MaximumNetworkInterfaces") or 0)
