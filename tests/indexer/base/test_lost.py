"""indexer.base.lost: the lost-events counter is reserved while there is room, so that it can be written on a full
disk; these pin the reservation's two gaps the walkthrough's full disk found."""

import os

from indexer.base import lost
from indexer.base.paths import LOST_EVENTS


def test_the_first_event_of_a_new_root_reserves_the_counter_making_the_state_folder(tmp_path):
    state = tmp_path / "root" / ".memsearch"
    (tmp_path / "root").mkdir()
    lost.reserve(state)
    assert (state / LOST_EVENTS).stat().st_size == lost.SIZE
    assert oct(state.stat().st_mode & 0o777) == "0o700"
    lost.reserve(tmp_path / "gone" / ".memsearch")  # never a deleted memory root made again
    assert not (tmp_path / "gone").exists()


def test_a_counter_left_short_by_a_full_disk_is_reserved_again_when_there_is_room(tmp_path):
    (tmp_path / LOST_EVENTS).touch()  # made when the disk was already full: its bytes could not be written
    lost.reserve(tmp_path)
    assert (tmp_path / LOST_EVENTS).stat().st_size == lost.SIZE
    assert lost.summary(tmp_path) is None
    assert lost.record(tmp_path, "No space left on device", told=True)
    lost.reserve(tmp_path)  # a full one is left as it is
    assert lost.summary(tmp_path)["count"] == 1 and lost.unannounced(tmp_path) is None
    assert os.path.getsize(tmp_path / LOST_EVENTS) == lost.SIZE
