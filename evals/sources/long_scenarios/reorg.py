"""A product lead's work log over eight weeks of a release cycle.

Three projects with near-identical names (Heron, Heron Mobile, Herald), two people called Dana,
a Portland and a Porto office; a ticket that changes hands three times, a manager change in a
reorg, a team move, a renamed project, a slipped release date, a resignation to a competitor;
issue tracker, directory and calendar tool results; preferences stated once and needed later.
"""

from __future__ import annotations

from long_scenarios.kit import (
    AGGREGATION,
    EVENT,
    MULTI,
    OPINION,
    PLAN,
    PREFERENCE,
    SINGLE,
    STATE,
    TEMPORAL,
    Scenario,
    ask,
    assistant,
    block,
    call,
    entity,
    fact,
    relation,
    result,
    session,
    unknown,
    user,
)

SESSIONS = (
    session(
        "2026-02-02T09:30:00+00:00",
        block(
            "intro",
            user(
                "Morning! I'm Ingrid Solberg, product lead at Larkspur Systems. I'll use this chat as my "
                "work log for the Heron 3.0 cycle."
            ),
            assistant("Good morning, Ingrid. I'll keep the log."),
        ),
        block(
            "heron",
            user("Heron is our billing platform. Its backend is written in Elixir on PostgreSQL."),
            assistant("Noted: Heron, the billing platform, Elixir on PostgreSQL."),
        ),
        block(
            "names",
            user(
                "Careful, there are three similar names: Heron (billing), Heron Mobile (the customer app, "
                "built with Flutter) and Herald (our notifications service, which runs on Kafka)."
            ),
            assistant("Got it: Heron is billing, Heron Mobile is the Flutter app, Herald is notifications on Kafka."),
        ),
        block(
            "manager",
            user("I report to Colette Marchand, our VP of Product."),
            assistant("Noted: you report to Colette Marchand, VP of Product."),
        ),
        block(
            "danas",
            user(
                "Two Danas on my side: Dana Kim is the backend lead on the Heron team, and Dana Kimura is the "
                "designer on Heron Mobile. Please never mix them up."
            ),
            assistant("Understood: Dana Kim, Heron backend lead; Dana Kimura, Heron Mobile designer."),
        ),
        block(
            "ticket",
            user("Can you pull up HRN-214?"),
            call("tracker.get_issue", {"key": "HRN-214"}),
            result(
                "tracker.get_issue",
                {
                    "key": "HRN-214",
                    "title": "Invoice PDF rendering",
                    "project": "Heron",
                    "assignee": "Dana Kim",
                    "status": "In Progress",
                    "fix_version": "3.0",
                },
            ),
            assistant("HRN-214, invoice PDF rendering, is in progress with Dana Kim, targeted at 3.0."),
        ),
    ),
    session(
        "2026-02-09T09:10:00+00:00",
        block(
            "release",
            user("Heron 3.0 is scheduled to ship on April 14."),
            assistant("Noted: Heron 3.0 ships April 14."),
        ),
        block(
            "kimball",
            user("Daniel Kimball does QA for Herald. He works out of the Portland office."),
            assistant("Noted: Daniel Kimball, QA for Herald, Portland office."),
        ),
        block(
            "mornings",
            user(
                "Personal rule: I keep my mornings meeting-free, so please suggest afternoon slots when I ask "
                "you to schedule things."
            ),
            assistant("Will do: afternoon slots only."),
        ),
        block(
            "samir",
            user("Samir Odeh is a backend engineer on Heron; he's been with us about a year."),
            assistant("Noted: Samir Odeh, backend engineer on Heron."),
        ),
        block(
            "review-plan",
            user("We need a launch review for Heron 3.0 with the leadership team at some point in March."),
            assistant("Noted: a Heron 3.0 launch review sometime in March."),
        ),
    ),
    session(
        "2026-02-16T10:00:00+00:00",
        block(
            "reassign-samir",
            user("Dana Kim is swamped, so reassign HRN-214 to Samir Odeh."),
            call("tracker.update_issue", {"key": "HRN-214", "assignee": "Samir Odeh"}),
            result("tracker.update_issue", {"key": "HRN-214", "assignee": "Samir Odeh", "status": "In Progress"}),
            assistant("Done: HRN-214 is now assigned to Samir Odeh."),
        ),
        block(
            "blocker-1",
            user("Let's track the open blockers for Heron 3.0. First one: HRN-220, the tax rounding bug."),
            assistant("Blocker 1: HRN-220, the tax rounding bug."),
        ),
        block(
            "blocker-2",
            user("Second blocker: HRN-231, the dunning email template."),
            assistant("Blocker 2: HRN-231, the dunning email template."),
        ),
        block(
            "porto",
            user("Can you look up where Dana Kimura sits? I need to ship her a test device."),
            call("directory.lookup", {"name": "Dana Kimura"}),
            result(
                "directory.lookup",
                {"name": "Dana Kimura", "title": "Product Designer", "team": "Heron Mobile", "office": "Porto office"},
            ),
            assistant("Dana Kimura is a product designer on Heron Mobile, based in the Porto office."),
        ),
    ),
    session(
        "2026-02-23T09:45:00+00:00",
        block(
            "reorg",
            user(
                "Big reorg news: Colette Marchand is leaving product to run Partnerships, and I now report to "
                "Viktor Aalto, our new CPO."
            ),
            assistant("Updated: you now report to Viktor Aalto (CPO); Colette Marchand moves to run Partnerships."),
        ),
        block(
            "memo-pref",
            user("Viktor doesn't want slide decks. He wants status updates as a one-page written memo."),
            assistant("Noted: status updates for Viktor go out as a one-page written memo."),
        ),
        block(
            "dana-moves",
            user("Part of the reorg: Dana Kim moves from the Heron team to the Herald team, as its tech lead."),
            assistant("Updated: Dana Kim is now tech lead on the Herald team."),
        ),
        block(
            "blocker-3",
            user("Third blocker for 3.0: HRN-236, the currency selector."),
            assistant("Blocker 3: HRN-236, the currency selector."),
        ),
    ),
    session(
        "2026-03-02T09:20:00+00:00",
        block(
            "rename",
            user(
                "Marketing decided that Heron Mobile is being renamed to Egret, since people kept confusing it "
                "with Heron. Same team, same app."
            ),
            assistant("Noted: Heron Mobile is now called Egret."),
        ),
        block(
            "review-date",
            user("The Heron 3.0 launch review is set: March 19."),
            assistant("Noted: Heron 3.0 launch review on March 19."),
        ),
        block(
            "samir-leaves",
            user("Bad news: Samir Odeh resigned. He's joining Quarry Labs, one of our competitors, at the end of the week."),
            assistant("Sorry to hear it. Noted: Samir Odeh is leaving for Quarry Labs."),
        ),
        block(
            "reassign-ravi",
            user("So HRN-214 goes to Ravi Menon, who just joined the Heron team from Herald."),
            call("tracker.update_issue", {"key": "HRN-214", "assignee": "Ravi Menon"}),
            result("tracker.update_issue", {"key": "HRN-214", "assignee": "Ravi Menon", "status": "In Progress"}),
            assistant("Done: HRN-214 is now with Ravi Menon."),
        ),
    ),
    session(
        "2026-03-09T13:15:00+00:00",
        block(
            "blocker-4",
            user("One more 3.0 blocker: HRN-240, the refund export."),
            assistant(
                "Blocker 4: HRN-240, the refund export. That's four open blockers for Heron 3.0: HRN-220, "
                "HRN-231, HRN-236 and HRN-240."
            ),
        ),
        block(
            "blocker-fixed",
            user("Good news, HRN-231 is fixed, so cross it off."),
            assistant("Crossed off HRN-231. Three blockers remain: HRN-220, HRN-236 and HRN-240."),
        ),
        block(
            "calendar",
            user("What's on the calendar for the launch review?"),
            call("calendar.list_events", {"date": "2026-03-19"}),
            result(
                "calendar.list_events",
                {
                    "events": [
                        {
                            "title": "Heron 3.0 launch review",
                            "date": "2026-03-19",
                            "start": "14:00",
                            "room": "Room Juniper",
                            "attendees": ["Ingrid Solberg", "Viktor Aalto", "Ravi Menon", "Colette Marchand"],
                        }
                    ]
                },
            ),
            assistant(
                "The Heron 3.0 launch review is on March 19 at 14:00 in Room Juniper, with Viktor Aalto, "
                "Ravi Menon and Colette Marchand."
            ),
        ),
        block(
            "egret-tech",
            user("Egret is moving off Flutter: its next version will be built with Kotlin Multiplatform."),
            assistant("Noted: Egret's next version moves to Kotlin Multiplatform."),
        ),
    ),
    session(
        "2026-03-16T14:05:00+00:00",
        block(
            "slip",
            user("Heron 3.0 slips two weeks: the new ship date is April 28."),
            assistant("Updated: Heron 3.0 now ships April 28 (it was April 14)."),
        ),
        block(
            "kimura-lead",
            user("Dana Kimura was promoted: she's now the design lead for Egret."),
            assistant("Updated: Dana Kimura is design lead for Egret."),
        ),
        block(
            "memo",
            user("Draft the status memo for Viktor, you know the format."),
            assistant(
                "Here's a one-page memo: Heron 3.0 ships April 28; the launch review is March 19; open "
                "blockers are HRN-220, HRN-236 and HRN-240; Egret's next version moves to Kotlin Multiplatform."
            ),
        ),
    ),
    session(
        "2026-03-23T15:30:00+00:00",
        block(
            "herald-outage",
            user("Herald had a short outage last night; Dana Kim's team traced it to consumer lag on Kafka."),
            assistant("Noted: Herald outage, Kafka consumer lag, handled by Dana Kim's team."),
        ),
        block(
            "samir-meetup",
            user("Ran into Samir at a meetup; he's settling in well at Quarry Labs."),
            assistant("Glad to hear it."),
        ),
    ),
)

ENTITIES = (
    entity("Ingrid Solberg", "person", "Ingrid", role="product lead"),
    entity("Larkspur Systems", "organization"),
    entity("Heron", "project"),
    entity("Heron 3.0", "event", date="April 28"),
    entity("Egret", "project", "Heron Mobile"),
    entity("Herald", "project"),
    entity("Elixir", "technology"),
    entity("PostgreSQL", "technology"),
    entity("Flutter", "technology"),
    entity("Kafka", "technology"),
    entity("Kotlin Multiplatform", "technology"),
    entity("Colette Marchand", "person"),
    entity("Partnerships", "organization"),
    entity("Viktor Aalto", "person", "Viktor", role="CPO"),
    entity("Dana Kim", "person", role="tech lead"),
    entity("Dana Kimura", "person", role="design lead"),
    entity("Heron team", "organization"),
    entity("Herald team", "organization"),
    entity("Daniel Kimball", "person"),
    entity("Portland office", "location"),
    entity("Porto office", "location"),
    entity("Samir Odeh", "person", "Samir", role="backend engineer"),
    entity("Quarry Labs", "organization"),
    entity("Ravi Menon", "person"),
    entity("HRN-214", "task", "invoice PDF rendering"),
    entity("HRN-220", "task", "tax rounding bug"),
    entity("HRN-231", "task", "dunning email template"),
    entity("HRN-236", "task", "currency selector"),
    entity("HRN-240", "task", "refund export"),
    entity("Heron 3.0 launch review", "event", date="March 19"),
    entity("Room Juniper", "location"),
)

RELATIONS = (
    relation("Ingrid Solberg", "works_for", "Larkspur Systems"),
    relation("Colette Marchand", "works_for", "Larkspur Systems"),
    relation("Viktor Aalto", "works_for", "Larkspur Systems"),
    relation("Ingrid Solberg", "reports_to", "Colette Marchand"),
    relation("Ingrid Solberg", "reports_to", "Viktor Aalto"),
    relation("Colette Marchand", "manages", "Partnerships"),
    relation("Heron", "part_of", "Larkspur Systems"),
    relation("Heron", "uses", "Elixir"),
    relation("Heron", "uses", "PostgreSQL"),
    relation("Egret", "uses", "Flutter"),
    relation("Egret", "uses", "Kotlin Multiplatform"),
    relation("Herald", "uses", "Kafka"),
    relation("Heron 3.0", "part_of", "Heron"),
    relation("Dana Kim", "member_of", "Heron team"),
    relation("Dana Kim", "member_of", "Herald team"),
    relation("Dana Kim", "manages", "Herald team"),
    relation("Dana Kimura", "works_on", "Egret"),
    relation("Daniel Kimball", "works_on", "Herald"),
    relation("Samir Odeh", "works_on", "Heron"),
    relation("Samir Odeh", "works_for", "Larkspur Systems"),
    relation("Samir Odeh", "works_for", "Quarry Labs"),
    relation("Ravi Menon", "member_of", "Herald team"),
    relation("Ravi Menon", "member_of", "Heron team"),
    relation("HRN-214", "part_of", "Heron"),
    relation("HRN-214", "part_of", "Heron 3.0"),
    relation("HRN-214", "assigned_to", "Dana Kim"),
    relation("HRN-214", "assigned_to", "Samir Odeh"),
    relation("HRN-214", "assigned_to", "Ravi Menon"),
    relation("HRN-220", "part_of", "Heron 3.0"),
    relation("HRN-231", "part_of", "Heron 3.0"),
    relation("HRN-236", "part_of", "Heron 3.0"),
    relation("HRN-240", "part_of", "Heron 3.0"),
    relation("Heron 3.0 launch review", "part_of", "Heron 3.0"),
    relation("Heron 3.0 launch review", "located_in", "Room Juniper"),
    relation("Ingrid Solberg", "attends", "Heron 3.0 launch review"),
    relation("Viktor Aalto", "attends", "Heron 3.0 launch review"),
    relation("Ravi Menon", "attends", "Heron 3.0 launch review"),
    relation("Colette Marchand", "attends", "Heron 3.0 launch review"),
)

QUESTIONS = (
    ask("Who is HRN-214 assigned to now?", "Ravi Menon", TEMPORAL, "reassign-ravi", "reassign-ravi@2"),
    ask("Who had HRN-214 before Ravi Menon?", "Samir Odeh", TEMPORAL, "reassign-samir", "reassign-samir@2"),
    ask("Who was HRN-214 assigned to when Ingrid first pulled it up?", "Dana Kim", TEMPORAL, "ticket@2"),
    ask("What is Heron Mobile called now?", "Egret", TEMPORAL, "rename"),
    ask("Who does Ingrid report to now?", "Viktor Aalto", TEMPORAL, "reorg"),
    ask("Who did Ingrid report to before the reorg?", "Colette Marchand", TEMPORAL, "manager"),
    ask("What does Colette Marchand run since the reorg?", "Partnerships", TEMPORAL, "reorg"),
    ask("Which team is Dana Kim on now?", "Herald team", TEMPORAL, "dana-moves"),
    ask("When does Heron 3.0 ship now?", "April 28", TEMPORAL, "slip"),
    ask("What was Heron 3.0's original ship date?", "April 14", TEMPORAL, "release"),
    ask("Where does Samir Odeh work now?", "Quarry Labs", TEMPORAL, "samir-leaves"),
    ask("What will Egret's next version be built with?", "Kotlin Multiplatform", TEMPORAL, "egret-tech"),
    ask("What is Dana Kimura's role on Egret now?", "design lead", TEMPORAL, "kimura-lead"),
    ask("Which office is Dana Kimura in?", "Porto office", SINGLE, "porto@2"),
    ask("Which office does Daniel Kimball work out of?", "Portland office", SINGLE, "kimball"),
    ask("What does Herald run on?", "Kafka", SINGLE, "names"),
    ask("What is Heron's backend written in?", "Elixir", SINGLE, "heron"),
    ask("What is HRN-214 about?", "invoice PDF rendering", SINGLE, "ticket@2"),
    ask("When is the Heron 3.0 launch review?", "March 19", SINGLE, "review-date"),
    ask("Which room is the Heron 3.0 launch review in?", "Room Juniper", SINGLE, "calendar@2"),
    ask("Which office does the designer of Egret work in?", "Porto office", MULTI, "danas", "rename", "porto@2"),
    ask(
        "What does the service of Dana Kim's new team run on?",
        "Kafka",
        MULTI,
        "dana-moves",
        "names",
    ),
    ask(
        "Which company did the second person assigned HRN-214 leave for?",
        "Quarry Labs",
        MULTI,
        "reassign-samir@2",
        "samir-leaves",
    ),
    ask("In what form does Viktor want status updates?", "a one-page written memo", PREFERENCE, "memo-pref"),
    ask("Which slots should Ingrid's meetings be in?", "afternoon slots", PREFERENCE, "mornings"),
    ask(
        "How many open blockers did Heron 3.0 have before HRN-231 was fixed?",
        "four",
        AGGREGATION,
        "blocker-1",
        "blocker-2",
        "blocker-3",
        "blocker-4",
        "blocker-4@1",
    ),
    ask(
        "Which Heron 3.0 blockers are still open?",
        "HRN-220, HRN-236 and HRN-240",
        AGGREGATION,
        "blocker-1",
        "blocker-3",
        "blocker-4",
        "blocker-fixed@1",
    ),
    unknown("How old is Viktor Aalto?"),
    unknown("What is the budget for Heron 3.0?"),
    unknown("Which city does Ravi Menon live in?"),
)

# What people said that no relation holds: how the lead and her new manager like to work, a ship date and
# a review that move, the open blockers as they change, dated events. A fact about Ingrid ("I ...") also
# cites the intro, where she gives her name.
FACTS = (
    fact(
        "Heron 3.0 is scheduled to ship on April 14",
        PLAN,
        "Heron 3.0",
        "release",
        topic="ship date",
        when="2026-04-14",
        said="April 14",
    ),
    fact(
        "Ingrid keeps her mornings meeting-free and wants afternoon slots when she asks to schedule things",
        PREFERENCE,
        "Ingrid Solberg",
        "intro",
        "mornings",
        topic="meetings",
    ),
    fact(
        "Samir Odeh is a backend engineer on Heron and has been with the company about a year",
        STATE,
        ("Samir Odeh", "Heron"),
        "samir",
        topic="tenure",
    ),
    fact(
        "Heron 3.0 needs a launch review with the leadership team in March",
        PLAN,
        ("Heron 3.0", "Heron 3.0 launch review"),
        "review-plan",
        topic="launch review",
        when="2026-03",
        said="in March",
    ),
    fact(
        "Ingrid reassigned HRN-214 to Samir Odeh because Dana Kim is swamped",
        EVENT,
        ("HRN-214", "Samir Odeh", "Dana Kim"),
        "reassign-samir",
    ),
    fact(
        "Viktor doesn't want slide decks: he wants status updates as a one-page written memo",
        PREFERENCE,
        "Viktor Aalto",
        "memo-pref",
        topic="status updates",
    ),
    fact(
        "Marketing renamed Heron Mobile to Egret because people kept confusing it with Heron",
        EVENT,
        ("Egret", "Heron"),
        "rename",
    ),
    fact(
        "The Heron 3.0 launch review is set for March 19",
        PLAN,
        ("Heron 3.0", "Heron 3.0 launch review"),
        "review-date",
        topic="launch review",
        when="2026-03-19",
        said="March 19",
    ),
    fact(
        "Samir Odeh resigned and is joining Quarry Labs, a competitor, at the end of the week",
        EVENT,
        ("Samir Odeh", "Quarry Labs"),
        "samir-leaves",
    ),
    fact(
        "Heron 3.0 has four open blockers: HRN-220, HRN-231, HRN-236 and HRN-240",
        STATE,
        ("Heron 3.0", "HRN-220", "HRN-231", "HRN-236", "HRN-240"),
        "blocker-4",
        "blocker-4@1",
        topic="blockers",
    ),
    fact(
        "HRN-231 is fixed, so three blockers remain for Heron 3.0: HRN-220, HRN-236 and HRN-240",
        STATE,
        ("Heron 3.0", "HRN-231", "HRN-220", "HRN-236", "HRN-240"),
        "blocker-fixed",
        "blocker-fixed@1",
        topic="blockers",
    ),
    fact(
        "The Heron 3.0 launch review is on 2026-03-19, start 14:00, in Room Juniper",
        PLAN,
        ("Heron 3.0 launch review", "Room Juniper"),
        "calendar@2",
        topic="schedule",
        when="2026-03-19",
        said="2026-03-19",
    ),
    fact(
        "Egret is moving off Flutter: its next version will be built with Kotlin Multiplatform",
        PLAN,
        ("Egret", "Flutter", "Kotlin Multiplatform"),
        "egret-tech",
        topic="tech stack",
    ),
    fact(
        "Heron 3.0 slips two weeks: the new ship date is April 28",
        PLAN,
        "Heron 3.0",
        "slip",
        topic="ship date",
        when="2026-04-28",
        said="April 28",
    ),
    fact("Dana Kimura was promoted to design lead for Egret", EVENT, ("Dana Kimura", "Egret"), "kimura-lead"),
    fact(
        "Herald had a short outage last night; Dana Kim's team traced it to consumer lag on Kafka",
        EVENT,
        ("Herald", "Dana Kim", "Kafka"),
        "herald-outage",
        when="2026-03-22",
        said="last night",
    ),
    fact(
        "Samir is settling in well at Quarry Labs",
        OPINION,
        ("Samir Odeh", "Quarry Labs"),
        "samir-meetup",
    ),
)

SCENARIO = Scenario(
    id="long-tape-product-reorg",
    description="A 200+ turn work log over eight dated weeks: look-alike project and people names, a ticket "
    "reassigned twice, a reorg that changes the manager and moves a lead to another team, a renamed project, a "
    "slipped release, a resignation to a competitor, and issue tracker, directory and calendar tool results.",
    tags=(
        "long",
        "tune",
        "people",
        "projects",
        "tasks",
        "deadlines",
        "temporal",
        "tool-facts",
        "aliases",
        "events",
        "technology",
    ),
    seed=20260202,
    sessions=SESSIONS,
    entities=ENTITIES,
    relations=RELATIONS,
    questions=QUESTIONS,
    facts=FACTS,
)
