"""Hardware profiles and site maps (SPEC D1, D3): packaged files, errors naming the key."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from loopact.errors import ConfigError
from loopact.robot.profile import load_profile, load_site
from loopact.sim import world


def test_packaged_profiles_load() -> None:
    sim = load_profile("sim")
    assert sim.drive == "differential" and sim.head.present
    assert sim.limits.max_linear_mps == 0.5
    assert sim.limits.max_angular_dps == 90
    assert sim.limits.max_motion_duration_s == 30
    assert sim.limits.obstacle_stop_m == 0.35
    assert sim.limits.command_timeout_s == 0.5
    assert sim.topics.cmd_vel == "cmd_vel"
    assert sim.topics.head_commands == "head_controller/commands"
    tb = load_profile("turtlebot4")
    assert tb.drive == "differential" and not tb.head.present
    mec = load_profile("mecanum_ptz")
    assert mec.drive == "mecanum" and mec.head.present


def test_sim_profile_matches_the_simulated_robot() -> None:
    sim = load_profile("sim")
    assert sim.camera.hfov_deg == world.CAMERA_HFOV_DEG
    assert sim.camera.mount_height_m == world.CAMERA_HEIGHT_M
    assert sim.footprint_radius_m == world.ROBOT_RADIUS_M
    assert sim.head.pan_limits_deg == pytest.approx((-90, 90))
    assert sim.head.tilt_limits_deg == pytest.approx((-30, 45))


def test_site_map_matches_the_simulated_room() -> None:
    site = load_site("sim_room")
    assert site.frame == "map"
    for name, (x, y) in world.WAYPOINTS.items():
        assert (site.waypoints[name].x_m, site.waypoints[name].y_m) == (x, y)
        assert site.contains(x, y)
    assert site.contains(0, 0)
    assert not site.contains(5.9, 0)  # within 0.3 m of the wall at x = 6
    assert not site.contains(0, -2.9)
    assert site.distance_to_fence(0, 0) == pytest.approx(1.7)


def test_unknown_name_lists_packaged(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="mecanum_ptz, sim, sim_arm, turtlebot4") as ei:
        load_profile("r2d2")
    assert ei.value.key == "profile"
    with pytest.raises(ConfigError, match="sim_room"):
        load_site("moon")
    with pytest.raises(ConfigError, match="cannot read"):
        load_profile(tmp_path / "missing.yaml")


def test_bad_value_names_key_and_file(tmp_path: Path) -> None:
    text = resources.files("loopact.robot").joinpath("profiles/sim.yaml").read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("max_linear_mps: 0.5", "max_linear_mps: -2"))
    with pytest.raises(ConfigError) as ei:
        load_profile(bad)
    assert ei.value.key == "profile.limits.max_linear_mps"
    assert str(bad) in str(ei.value) and "limits.max_linear_mps" in str(ei.value)

    bad.write_text(text.replace("drive: differential", "drive: legs"))
    with pytest.raises(ConfigError, match="drive"):
        load_profile(bad)

    bad.write_text(text.replace("pose_max_age_s: 0.5", "pose_max_age_s: .nan"))
    with pytest.raises(ConfigError, match="pose_max_age_s"):
        load_profile(bad)

    bad.write_text("name: [unclosed")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_profile(bad)


def test_bad_site(tmp_path: Path) -> None:
    bad = tmp_path / "site.yaml"
    bad.write_text("frame: map\nwaypoints:\n  a: {x_m: 1}\n")
    with pytest.raises(ConfigError) as ei:
        load_site(bad)
    assert ei.value.key == "site.waypoints.a.y_m"
    bad.write_text("geofence: [[0, 0], [1, 1]]\n")
    with pytest.raises(ConfigError, match="geofence.*3 vertices"):
        load_site(bad)
    bad.write_text("waypoints:\n  a: {x_m: 1, y_m: 0, names: [Dock]}\n  dock: {x_m: 0, y_m: 0}\n")
    with pytest.raises(ConfigError, match="the name 'dock' is used by 'a' and 'dock'"):
        load_site(bad)
