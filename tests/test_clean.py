"""clean_body: imageboard HTML to the clean text the agent reads."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from terrarium_dagster.corpus import clean
from terrarium_dagster.corpus.clean import clean_body
from terrarium_dagster.testing.synthetic import generate_corpus


@pytest.mark.parametrize("body", [None, "", "<br>", "<br><br/>", "   ", "<p></p>"])
def test_nothing_visible_is_the_empty_string(body: str | None) -> None:
    assert clean_body(body) == ""


@pytest.mark.parametrize("br", ["<br>", "<br/>", "<br />", "<BR>", "<Br >"])
def test_every_spelling_of_br_is_a_line_break(br: str) -> None:
    assert clean_body(f"one{br}two") == "one\ntwo"


def test_paragraph_and_div_boundaries_start_new_lines() -> None:
    assert clean_body("<p>one</p><p>two</p>three<div>four</div>five") == (
        "one\ntwo\nthree\nfour\nfive"
    )


def test_named_decimal_and_hex_entities_are_unescaped() -> None:
    assert clean_body("Tom &amp; Jerry &lt;3 &quot;hi&quot; it&#039;s &#x27;x&#39; &copy;") == (
        "Tom & Jerry <3 \"hi\" it's 'x' ©"
    )


def test_entities_are_unescaped_once() -> None:
    assert clean_body("&amp;gt; stays &amp;#039; escaped once<br>x") == (
        "&gt; stays &#039; escaped once\nx"
    )


def test_escaped_markup_stays_text() -> None:
    assert clean_body("&lt;b&gt;not bold&lt;/b&gt;") == "<b>not bold</b>"


def test_quotelink_reads_as_double_angle_quote() -> None:
    body = '<a href="#p123" class="quotelink">&gt;&gt;123</a><br>I agree'
    assert clean_body(body) == ">>123\nI agree"


def test_cross_thread_quote_is_kept_as_text() -> None:
    body = '<a href="/qst/thread/77#p5" class="quotelink">&gt;&gt;&gt;/qst/5</a> and >>>/tg/9'
    assert clean_body(body) == ">>>/qst/5 and >>>/tg/9"


@pytest.mark.parametrize(
    "link",
    [
        '<a class="quotelink" href="#p456"></a>',
        "<a class='quotelink' href='/qst/thread/1#p456'/>",
        '<a class="quotelink deadlink" href="/qst/res/456"> </a>',
    ],
)
def test_quotelink_without_text_is_rebuilt_from_its_href(link: str) -> None:
    assert clean_body(f"{link} see") == ">>456 see"


def test_ordinary_link_keeps_its_text_only() -> None:
    assert clean_body('<a href="https://x.example/a">the map</a>') == "the map"


def test_greentext_span_reads_with_its_angle() -> None:
    body = '<span class="quote">&gt;be me</span><br><span class="quote">&gt;Go north</span>'
    assert clean_body(body) == ">be me\n>Go north"


def test_other_tags_are_stripped_and_their_text_kept() -> None:
    assert clean_body("<b>bold</b> <i>it</i> <s>spoiler</s> <u>u</u> long<wbr>word") == (
        "bold it spoiler u longword"
    )


def test_nested_and_misnested_tags_keep_all_text() -> None:
    assert clean_body("<b>bold <i>both</b> italic</i> plain</span></a>") == (
        "bold both italic plain"
    )


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("a < b and c > d<br>e", "a < b and c > d\ne"),
        ("text <unclosed", "text <unclosed"),
        ('<span class="quote">&gt;cut off', ">cut off"),
        ("<b>never closed<br>next", "never closed\nnext"),
        ("I <3 you", "I <3 you"),
        ('<a title="x>y" class="quotelink">&gt;&gt;9</a>', ">>9"),
        ("<!-- a comment -->shown<br>too", "shown\ntoo"),
    ],
)
def test_malformed_markup_never_loses_text(body: str, expected: str) -> None:
    assert clean_body(body) == expected


def test_script_and_style_content_is_dropped() -> None:
    body = "<script>alert('x')</script>vis<style>.a { color: red }</style>ible<br><script>open"
    assert clean_body(body) == "visible"


def test_trailing_spaces_are_stripped_and_blank_runs_collapse() -> None:
    body = "one   two \t three  <br>  four<br><br><br><br>five&nbsp;&nbsp;six<br> "
    assert clean_body(body) == "one two three\nfour\n\nfive six"


def test_raw_newlines_in_markup_are_spaces() -> None:
    assert clean_body("line one<br>\nline\ntwo\r\n<br>end") == "line one\nline two\nend"


def test_raw_newlines_in_plain_text_are_line_breaks() -> None:
    assert clean_body("one\r\ntwo\n\n\n\nthree &amp; four ") == "one\ntwo\n\nthree & four"


# The fast path (regular expression tokeniser) and html.parser must give the same text.
EQUIVALENCE_BODIES = [
    "plain<br>text",
    '<a href="#p1" class="quotelink">&gt;&gt;1</a><br><span class="quote">&gt;g</span>',
    "<p>one</p><p>two</p>x<br/><div>y</div>",
    '<a class="quotelink" href="#p9"></a>',
    "<a class=quotelink href=#p9></a>",
    "<A CLASS='quotelink' HREF='#p9'>&gt;&gt;9</A> tail",
    "a&nbsp;b &copy; &amp;amp; <b>c</b>\n<i>d</i>",
    "  spaced   <br>  out  ",
    '<span class="quote">&gt;a</span><br><span class="quote">&gt;b</span>',
    "<br><br><br><br>x<br>",
]


@pytest.mark.parametrize("body", EQUIVALENCE_BODIES)
def test_fast_path_matches_html_parser(body: str) -> None:
    fast = clean._fast_path(body)
    assert fast is not None
    assert fast == clean._parser_path(body)


def test_fast_path_matches_html_parser_on_synthetic_bodies(tmp_path: Path) -> None:
    path = generate_corpus(tmp_path / "s.db", threads=3, posts_per_thread=80, seed=3)
    conn = sqlite3.connect(path)
    bodies = [row[0] for row in conn.execute("SELECT body FROM post WHERE body != ''")]
    conn.close()
    assert len(bodies) > 200
    for body in bodies:
        fast = clean._fast_path(body)
        assert fast is not None, body
        assert fast == clean._parser_path(body), body


def test_unusual_markup_goes_to_html_parser() -> None:
    for body in ("<script>x</script>y", "a < b<br>", "<!-- c -->d", '<a title="x>y">z</a>'):
        assert clean._fast_path(body) is None
