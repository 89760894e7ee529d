from self_refine import refine


def test_offline_run_stops_when_critic_is_satisfied() -> None:
    result = refine("Write a sentence using the words: dog, frisbee, park.", model="offline")
    assert result["stop_reason"] == "critic_done"
    assert result["score"] == 1.0
    assert all(word in result["answer"] for word in ("dog", "frisbee", "park"))
