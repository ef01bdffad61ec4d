# Writes rtl.json: the CLIENT_RULES.md right-to-left decision vectors. The expectations
# below are written by hand from the rule; this script only splits texts into deltas.
import json, pathlib, re

def words(s):
    """Splits text into word-sized deltas the way a model streams them (space kept in front)."""
    return re.findall(r"\s*\S+|\s+$", s)

MD = set('#*_`~>-|=+[]()!')
def sample_position(text, ch):
    """1-based position of `ch` in the sample (checks the hand-written positions below)."""
    s = [c for c in text if not c.isspace() and c not in MD]
    return s.index(ch) + 1

c25 = "## Note: the buyer and the sells **عقد** agreement signed today by both parties in full"
c35 = "## Note: the buyer and the seller shall sign عقد agreement today in full"
assert sample_position(c25, "ع") == 25 and sample_position(c35, "ع") == 35

RTL = {"direction": "rtl", "isArabic": True, "lineHeight": 1.8}
LTR = {"direction": "ltr", "isArabic": False, "lineHeight": 1.4}
cases = [
    {"name": "thematic break, newline, then Arabic", "deltas": ["---", "\n", "هذه اتفاقية عدم إفصاح ملزمة للطرفين الموقعين أدناه"],
     "expect": {**RTL, "decidedAfterDelta": 2}},
    {"name": "two newlines, then Arabic", "deltas": ["\n", "\n", "هذه اتفاقية عدم إفصاح ملزمة للطرفين الموقعين أدناه"],
     "expect": {**RTL, "decidedAfterDelta": 2}},
    {"name": "pure Arabic", "deltas": words("## البند ١ — التعريفات\n\nيقصد بالمعلومات السرية كل ما يفصح عنه أحد الطرفين للطرف الآخر"),
     "expect": {**RTL, "decidedAfterDelta": 6}},
    {"name": "pure English", "deltas": words("# Mutual NDA\n\nThis agreement is made between the parties named below."),
     "expect": {**LTR, "decidedAfterDelta": 7}},
    {"name": "English, the only Arabic word at sample position 25", "deltas": words(c25),
     "expect": {**RTL, "decidedAfterDelta": 8}},
    {"name": "English, the only Arabic word at sample position 35", "deltas": words(c35),
     "expect": {**LTR, "decidedAfterDelta": 7}},
    {"name": "markdown and whitespace do not decide: heading markers, emphasis, table pipes", "deltas":
        ["# ", "**", "\u00a0", "|", " --- ", "|", "\n", "> ", "`", "~~", "الطرف الأول يلتزم بالحفاظ على سرية المعلومات"],
     "expect": {**RTL, "decidedAfterDelta": 10}},
    {"name": "short Arabic answer: decided at done with a partial sample", "deltas": ["نعم، ", "موافق."],
     "expect": {**RTL, "decidedAfterDelta": None}},
    {"name": "short English answer: decided at done", "deltas": ["Yes, ", "agreed."],
     "expect": {**LTR, "decidedAfterDelta": None}},
    {"name": "empty answer: left-to-right at done", "deltas": [],
     "expect": {**LTR, "decidedAfterDelta": None}},
    {"name": "only markdown and whitespace: left-to-right at done", "deltas": ["---\n", "\n\n", "* * *\n"],
     "expect": {**LTR, "decidedAfterDelta": None}},
    {"name": "Arabic presentation forms count as Arabic", "deltas": ["The parties signed the agreement on the first day of May ", "ﷺ"],
     "expect": {**LTR, "decidedAfterDelta": 0}},
    {"name": "Arabic presentation form inside the first 30 scalars", "deltas": ["Signed ", "ﻻ", " by the parties on the first day of May"],
     "expect": {**RTL, "decidedAfterDelta": 2}},
    {"name": "scalars, not UTF-16 units: emoji count once each", "deltas": ["😀" * 29, "ع"],
     "expect": {**RTL, "decidedAfterDelta": 1}},
]
doc = {
    "description": "The right-to-left decision (CLIENT_RULES.md). Feed `deltas` one by one to the decider "
                   "(the sample = the first 30 Unicode scalars of the concatenated deltas that are neither White_Space "
                   "nor one of # * _ ` ~ > - | = + [ ] ( ) !). `decidedAfterDelta` is the 0-based index of the delta "
                   "after which the sample first holds 30 scalars; null = not decided before the stream ends (the "
                   "decision is then made at done with whatever the sample holds). Arabic in the sample → rtl, "
                   "isArabic, lineHeight 1.8; else ltr, 1.4.",
    "cases": cases,
}
out = pathlib.Path(__file__).with_name("rtl.json")
out.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
print(f"wrote {out} ({len(cases)} cases)")
