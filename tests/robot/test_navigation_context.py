"""Where the navigation map comes from, and a bad map file named (issue 40 items 1, bad input)."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopact.errors import ConfigError
from loopact.maps import empty_grid, write_map
from loopact.robot.profile import load_profile, load_site
from loopact.robot.session import navigation_context


def test_no_map_is_the_go_to_pose_controller_and_a_map_file_the_planner(tmp_path: Path) -> None:
    prof, site = load_profile("sim"), load_site("sim_room")
    assert navigation_context(prof, site).backend == "direct"
    yaml_path, _ = write_map(empty_grid(4.0, 3.0, 0.05), tmp_path, "m")
    nav = navigation_context(prof, site, yaml_path)
    assert nav.backend == "planner" and nav.grid() is not None
    assert nav.radius_m == prof.footprint_radius_m


def test_a_site_file_names_its_map_relative_to_itself(tmp_path: Path) -> None:
    write_map(empty_grid(4.0, 3.0, 0.05), tmp_path / "maps", "home")
    site_file = tmp_path / "home.yaml"
    site_file.write_text("waypoints: {sofa: {x_m: 1.0, y_m: 1.0}}\nmap: maps/home.yaml\n")
    site = load_site(site_file)
    assert site.map == tmp_path / "maps" / "home.yaml"
    nav = navigation_context(load_profile("sim"), site)
    assert nav.grid() is not None and nav.grid().width == 80  # type: ignore[union-attr]


def test_a_missing_or_bad_map_file_is_a_config_error_naming_robot_map(tmp_path: Path) -> None:
    prof, site = load_profile("sim"), load_site("sim_room")
    with pytest.raises(ConfigError) as missing:
        navigation_context(prof, site, tmp_path / "nope.yaml")
    assert missing.value.key == "robot.map" and "no such file" in str(missing.value)
    bad = tmp_path / "bad.yaml"
    bad.write_text("image: m.pgm\nresolution: 0.05\norigin: [0, 0]\n")
    with pytest.raises(ConfigError, match="'origin' must be"):
        navigation_context(prof, site, bad)
