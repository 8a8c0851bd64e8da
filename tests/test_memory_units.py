"""Counts and sizes as people write them (``--params 7B``, ``--gpu-memory 24GiB``) and as the report prints them."""

from __future__ import annotations

import pytest

from gpudoctor.memory.units import fmt_bytes, fmt_count, parse_count, parse_size, pytorch_size


@pytest.mark.parametrize("text,count", [("7k", 7_000), ("7K", 7_000), ("7m", 7_000_000), (" 7 B ", 7_000_000_000),
                                        ("7 b", 7_000_000_000), ("2t", 2_000_000_000_000), ("1.5e3", 1_500),
                                        ("1e3", 1_000), (12, 12)])
def test_parameter_counts_in_any_case_and_spacing(text, count):
    assert parse_count(text) == count


def test_bad_parameter_counts_say_what_to_write():
    with pytest.raises(ValueError) as e:
        parse_count("seven")
    assert str(e.value) == "not a parameter count: 'seven' (write 7B, 138M, 7e9 or 124439808)"
    with pytest.raises(ValueError) as e:
        parse_count("0.4")                                  # rounds to no parameter at all
    assert str(e.value) == "not a parameter count: '0.4' (it must be positive)"
    assert parse_count("0.6") == 1 and parse_count("1") == 1


@pytest.mark.parametrize("text,size", [("24G", 24 * 2 ** 30), ("24g", 24 * 2 ** 30), ("1536 m", 1536 * 2 ** 20),
                                       ("2k", 2048), ("1 TiB", 2 ** 40), ("3mb", 3 * 2 ** 20), ("1GIB", 2 ** 30),
                                       (" 4096 ", 4096), (4096, 4096)])
def test_sizes_in_binary_units_whatever_the_spelling(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["x", "1.5", "24 GiBs", "-1G"])
def test_bad_sizes_say_what_to_write(text):
    with pytest.raises(ValueError) as e:
        parse_size(text)
    assert str(e.value) == f"not a memory size: {text!r} (write 24GiB, 80GB, 1536MiB or bytes)"


@pytest.mark.parametrize("n,text", [(0, "0 B"), (999.9, "999 B"), (1023, "1023 B"), (1024, "1.00 KiB"),
                                    (2 ** 20 - 1, "1024.00 KiB"), (2 ** 20, "1.00 MiB"), (528 * 2 ** 20, "528.00 MiB"),
                                    (2 ** 30, "1.00 GiB"), (28e9, "26.08 GiB"), (2 ** 40, "1.00 TiB"),
                                    (1.5 * 2 ** 40, "1.50 TiB"), (-2 ** 30, "-1.00 GiB"), (-1, "-1 B")])
def test_bytes_as_people_read_them(n, text):
    assert fmt_bytes(n) == text


@pytest.mark.parametrize("n,text", [(0, "0"), (4096, "4,096"), (999_999, "999,999"), (10 ** 6, "1.00M"),
                                    (124_439_808, "124.44M"), (10 ** 9, "1.00B"), (6_738_415_616, "6.74B"),
                                    (10 ** 12, "1.00T"), (1_500_000_000_000, "1.50T")])
def test_parameter_counts_as_papers_print_them(n, text):
    assert fmt_count(n) == text


@pytest.mark.parametrize("mib,text", [(1024, "1.00 GiB"), (130674.91 * 1024, "130674.91 GiB"),
                                      (1023.99, "1023.99 MiB"), (1, "1.00 MiB"), (0.5, "512.00 KiB"),
                                      (0, "0.00 KiB")])
def test_sizes_as_pytorch_messages_print_them(mib, text):
    assert pytorch_size(mib) == text
