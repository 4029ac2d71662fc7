"""The deployment recipe of deploy/, checked as far as this machine allows (no Docker daemon, no
cluster): every file parses; the pieces agree with each other (each story's code location, its
mount, its settings, the run launcher's variables); the Dagster instances load from the files,
their run launchers built and their storage answering from a real PostgreSQL server on loopback.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dagster as dg
import pytest
import yaml

from tests.support.dagster_dev import REPO

if TYPE_CHECKING:
    from tests.support.postgres import Postgres

pytest_plugins = ["tests.support.postgres"]

DEPLOY = REPO / "deploy"
DOCKER = DEPLOY / "docker"
KUBERNETES = DEPLOY / "kubernetes"
STORIES_ROOT = "/srv/terrarium/stories"


def _compose_env(value: str, env: dict[str, str]) -> str:
    """Compose's interpolation of `${NAME}`, `${NAME:-default}` and `${NAME:?message}`."""

    def replace(match: re.Match[str]) -> str:
        name, _, rest = match.group(1).partition(":")
        if name in env:
            return env[name]
        if rest.startswith("-"):
            return rest[1:]
        raise AssertionError(f"{name} must be set: {rest[1:]}")

    return re.sub(r"\$\{([^}]+)\}", replace, value)


def _load_instance(home: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Any:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return dg.DagsterInstance.from_config(str(home))


def _yaml_documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def test_every_file_of_the_recipe_parses() -> None:
    files = sorted(DEPLOY.rglob("*.yaml"))
    assert len(files) >= 10
    for path in files:
        assert _yaml_documents(path), path
    for path in DEPLOY.rglob("*.py"):
        compile(path.read_text(), str(path), "exec")


def test_docker_compose_serves_each_story_from_its_own_code_location(
    postgres: Postgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compose = yaml.safe_load((DOCKER / "docker-compose.yaml").read_text())
    services = compose["services"]
    assert {"postgres", "webserver", "daemon", "vllm"} <= set(services)
    workspace = yaml.safe_load((DOCKER / "workspace.yaml").read_text())
    locations = [entry["grpc_server"] for entry in workspace["load_from"]]
    assert len(locations) >= 2
    env = {"TERRARIUM_STORIES": STORIES_ROOT, "DAGSTER_PG_PASSWORD": "from-the-environment"}
    for location in locations:
        story = location["location_name"]
        service = services[location["host"]]
        assert "-m" in service["command"] and "terrarium_dagster.definitions" in service["command"]
        assert str(location["port"]) in service["command"]
        settings_file = service["environment"]["TERRARIUM_CONFIG"]
        assert settings_file == f"/stories/{story}/terrarium.yaml"
        mount = _compose_env(f"${{TERRARIUM_STORIES:?}}/{story}:/stories/{story}", env)
        assert [_compose_env(volume, env) for volume in service["volumes"]] == [mount]
        context = json.loads(_compose_env(service["environment"]["DAGSTER_CONTAINER_CONTEXT"], env))
        assert context["docker"]["volumes"] == [mount], "every run container mounts the story"
        assert context["docker"]["env_vars"] == [f"TERRARIUM_CONFIG={settings_file}"]
        settings = yaml.safe_load((DOCKER / "stories" / story / "terrarium.yaml").read_text())
        assert settings["story"] == story
        assert Path(settings["db"]).parent == Path(f"/stories/{story}"), "the store in the mount"
    for name in ("webserver", "daemon"):
        mounted = {volume.split(":")[1] for volume in services[name]["volumes"]}
        assert {"/opt/dagster/home/dagster.yaml", "/opt/dagster/workspace.yaml"} <= mounted
    assert any("docker.sock" in volume for volume in services["daemon"]["volumes"])
    assert compose["networks"]["terrarium"]["name"] == "terrarium"

    # the instance: PostgreSQL storage (the password from the environment) and the run launcher
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(DOCKER / "dagster.yaml", home / "dagster.yaml")
    config = yaml.safe_load((home / "dagster.yaml").read_text())
    assert config["storage"]["postgres"]["postgres_db"]["password"] == {
        "env": "DAGSTER_PG_PASSWORD"
    }
    launcher = config["run_launcher"]["config"]
    assert launcher["network"] == "terrarium"
    assert {"DAGSTER_PG_PASSWORD", "TERRARIUM_AGENT_URL"} <= set(launcher["env_vars"])
    with _load_instance(home, postgres.env(), monkeypatch) as instance:
        assert type(instance.run_launcher).__name__ == "DockerRunLauncher"
        assert instance.get_runs_count() == 0  # PostgreSQL answers
        assert instance.get_concurrency_config().pool_config.default_pool_limit == 1
    assert [path.name for path in home.iterdir()] == ["dagster.yaml"], "nothing on disk"


def _kubeconfig(path: Path) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return path


def _typed(document: dict[str, Any]) -> object:
    """The manifest as the Kubernetes client's typed model (required fields checked)."""
    from kubernetes import client

    class Response:
        data = json.dumps(document)

    group = document["apiVersion"].split("/")[0].split(".")[0]
    version = document["apiVersion"].split("/")[-1]
    prefix = "" if group == version else group.capitalize()
    name = f"{version.capitalize()}{document['kind']}"
    model = f"{prefix}{name}" if prefix and hasattr(client, f"{prefix}{name}") else name
    return client.ApiClient().deserialize(Response(), model)


def _kustomized(folder: Path) -> list[dict[str, Any]]:
    """The kustomization's documents: built by `kubectl kustomize` where kubectl is installed,
    else its resources read with its namespace set (all this kustomization does)."""
    if shutil.which("kubectl") is not None:
        built = subprocess.run(
            ["kubectl", "kustomize", str(folder)], capture_output=True, text=True, check=False
        )
        assert built.returncode == 0, built.stderr
        return [doc for doc in yaml.safe_load_all(built.stdout) if doc]
    kustomization = yaml.safe_load((folder / "kustomization.yaml").read_text())
    assert set(kustomization) == {"namespace", "resources"}
    documents = []
    for resource in kustomization["resources"]:
        for document in _yaml_documents(folder / resource):
            if document["kind"] != "PersistentVolume":  # cluster-wide
                document["metadata"]["namespace"] = kustomization["namespace"]
            documents.append(document)
    return documents


def test_kubernetes_manifests_build_and_pin_each_story_to_its_volumes_node(
    postgres: Postgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    documents = _kustomized(KUBERNETES)
    by_kind: dict[str, dict[str, dict[str, Any]]] = {}
    for document in documents:
        assert document["metadata"].get("namespace") == "terrarium" or document["kind"] in (
            "PersistentVolume",
        )
        _typed(document)
        by_kind.setdefault(document["kind"], {})[document["metadata"]["name"]] = document
    assert {"dagster-webserver", "dagster-daemon", "vllm"} <= set(by_kind["Deployment"])
    instance_map = by_kind["ConfigMap"]["dagster-instance"]["data"]
    workspace = yaml.safe_load(instance_map["workspace.yaml"])
    for entry in workspace["load_from"]:
        story = entry["grpc_server"]["location_name"]
        deployment = by_kind["Deployment"][entry["grpc_server"]["host"]]
        pod = deployment["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        env = {item["name"]: item.get("value") for item in container["env"]}
        context = json.loads(env["DAGSTER_CONTAINER_CONTEXT"])["k8s"]
        claim = next(
            volume["persistentVolumeClaim"]["claimName"]
            for volume in context["volumes"]
            if "persistentVolumeClaim" in volume
        )
        volume = by_kind["PersistentVolume"][
            by_kind["PersistentVolumeClaim"][claim]["spec"]["volumeName"]
        ]
        assert "local" in volume["spec"], "a story's store is on a node's local disk"
        (term,) = volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
        (node,) = term["matchExpressions"][0]["values"]
        selector = context["run_k8s_config"]["pod_spec_config"]["node_selector"]
        assert selector == {"kubernetes.io/hostname": node}, "run pods on the volume's node"
        assert pod["nodeSelector"] == {"kubernetes.io/hostname": node}
        settings_map = next(v["configMap"]["name"] for v in context["volumes"] if "configMap" in v)
        settings = yaml.safe_load(by_kind["ConfigMap"][settings_map]["data"]["terrarium.yaml"])
        assert settings["story"] == story
        mounts = {mount["mountPath"] for mount in context["volume_mounts"]}
        assert str(Path(settings["db"]).parent) in mounts, "the store is on the mounted volume"

    # the instance of the ConfigMap, loaded outside a cluster: a kubeconfig instead of the pod's
    home = tmp_path / "home"
    home.mkdir()
    config = yaml.safe_load(instance_map["dagster.yaml"])
    launcher = config["run_launcher"]["config"]
    assert launcher["load_incluster_config"] is True
    launcher["load_incluster_config"] = False
    launcher["kubeconfig_file"] = str(_kubeconfig(tmp_path / "kubeconfig"))
    storage = config["storage"]["postgres"]["postgres_db"]
    assert storage["password"] == {"env": "DAGSTER_PG_PASSWORD"}
    storage.update(hostname=postgres.host, port=postgres.port, username=postgres.user)
    storage["db_name"] = postgres.database
    (home / "dagster.yaml").write_text(yaml.safe_dump(config))
    with _load_instance(home, postgres.env(), monkeypatch) as instance:
        assert type(instance.run_launcher).__name__ == "K8sRunLauncher"
        assert instance.get_runs_count() == 0


def test_every_variable_the_docker_launcher_hands_a_run_is_set_for_the_daemon() -> None:
    """`DockerRunLauncher` refuses to launch a run when a variable its `env_vars` lists is not
    set in the daemon's environment: TERRARIUM_API_KEY was listed and never set."""
    compose = yaml.safe_load((DOCKER / "docker-compose.yaml").read_text())
    launcher = yaml.safe_load((DOCKER / "dagster.yaml").read_text())["run_launcher"]["config"]
    daemon = compose["services"]["daemon"]["environment"]
    for name in launcher["env_vars"]:
        bare = name.split("=", 1)[0]
        assert bare in daemon, bare
        _compose_env(str(daemon[bare]), {"DAGSTER_PG_PASSWORD": "secret"})


def test_every_instance_of_the_recipe_monitors_its_runs() -> None:
    """A run whose worker was killed stayed CANCELING on the local PostgreSQL instance and held
    its story's pool slot for good: the next run of the story never left the queue."""
    local = yaml.safe_load((DEPLOY / "local" / "dagster.yaml").read_text())
    docker = yaml.safe_load((DOCKER / "dagster.yaml").read_text())
    checkout = yaml.safe_load((REPO / "dagster.yaml").read_text())
    kubernetes = next(yaml.safe_load_all((KUBERNETES / "instance.yaml").read_text()))
    cluster = yaml.safe_load(kubernetes["data"]["dagster.yaml"])
    for instance in (local, docker, checkout, cluster):
        monitoring = instance["run_monitoring"]
        assert monitoring["enabled"]
        # an ended run's pool slot is freed (Dagster keeps it claimed otherwise)
        assert monitoring["free_slots_after_run_end_seconds"] > 0


def test_the_stories_of_one_deployment_serve_their_sites_on_ports_of_their_own() -> None:
    """Two stories on one `site_url`: each one's materializations linked the other's pages."""
    stories = sorted((DEPLOY / "stories").glob("*/terrarium.yaml"))
    urls = [yaml.safe_load(path.read_text())["site_url"] for path in stories]
    assert len(stories) >= 2 and len(set(urls)) == len(urls), urls
