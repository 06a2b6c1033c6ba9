"""An account executive's desk over eight weeks, kept in a CRM.

Three customers with near-identical names (Northgate Foods, Northgate Freight, Norgate Pharma),
contacts called Paul Ambrose and Paula Ambrosi, Lucy Tran and Lucia Tramonti; a deal whose
stage and amount change several times, a contact who changes employer and is replaced, an
account handed to a colleague, a demo moved to another date; CRM, calendar tool results; how
each contact likes to be reached, stated once.
"""

from __future__ import annotations

from long_scenarios.kit import (
    AGGREGATION,
    EVENT,
    MULTI,
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

RENEWAL = "Northgate Foods renewal"

SESSIONS = (
    session(
        "2026-04-01T08:45:00+00:00",
        block(
            "intro",
            user(
                "Hi, I'm Beatrix Holloway, account executive at Cindergate Analytics. Everyone calls me Bea. "
                "I'll log my accounts here."
            ),
            assistant("Hi Bea! Ready when you are."),
        ),
        block(
            "manager",
            user("My sales director is Helen Strand."),
            assistant("Noted: you report to Helen Strand, sales director."),
        ),
        block(
            "accounts",
            user(
                "Heads-up on names: Northgate Foods (groceries, based in Spokane), Northgate Freight "
                "(trucking, based in Reno) and Norgate Pharma (based in Raleigh) are three different "
                "companies. I own all three accounts."
            ),
            assistant("Got it: Northgate Foods in Spokane, Northgate Freight in Reno, Norgate Pharma in Raleigh, all yours."),
        ),
        block(
            "crm-foods",
            user("Pull up the Northgate Foods account."),
            call("crm.get_account", {"name": "Northgate Foods"}),
            result(
                "crm.get_account",
                {
                    "account": "Northgate Foods",
                    "hq_city": "Spokane",
                    "owner": "Beatrix Holloway",
                    "primary_contact": {"name": "Paul Ambrose", "title": "Head of Procurement"},
                    "opportunities": [{"name": RENEWAL, "stage": "Discovery", "amount": 48000}],
                },
            ),
            assistant(
                "Northgate Foods: primary contact Paul Ambrose (Head of Procurement); one opportunity, the "
                "Northgate Foods renewal, in Discovery at 48,000."
            ),
        ),
        block(
            "paul-pref",
            user("Paul hates email. Always call him instead."),
            assistant("Noted: call Paul Ambrose, don't email him."),
        ),
    ),
    session(
        "2026-04-08T09:00:00+00:00",
        block(
            "legal",
            user(
                "Another Paul-ish name: Paula Ambrosi is our legal counsel at Cindergate, she reviews every "
                "contract."
            ),
            assistant("Noted: Paula Ambrosi, legal counsel at Cindergate, reviews every contract."),
        ),
        block(
            "freight-contacts",
            user("At Northgate Freight my contacts are Oskar Lind, the CFO, and Lucia Tramonti, a buyer."),
            assistant("Noted: Oskar Lind (CFO) and Lucia Tramonti (buyer) at Northgate Freight."),
        ),
        block(
            "oskar-pref",
            user("Oskar wants every quote in writing; he won't discuss numbers on a call."),
            assistant("Noted: quotes for Oskar Lind go out in writing."),
        ),
        block(
            "stage-proposal",
            user("The Northgate Foods renewal moved to Proposal."),
            call("crm.update_opportunity", {"name": RENEWAL, "stage": "Proposal"}),
            result("crm.update_opportunity", {"name": RENEWAL, "stage": "Proposal", "amount": 48000}),
            assistant("Updated: the Northgate Foods renewal is in Proposal."),
        ),
    ),
    session(
        "2026-04-15T08:30:00+00:00",
        block(
            "pilot",
            user("New opportunity: the Northgate Freight pilot, 20,000, closing by June 30."),
            assistant("Added: Northgate Freight pilot, 20,000, close date June 30."),
        ),
        block(
            "expo-plan",
            user("Helen wants us at a trade show this summer, probably FreshTech Expo."),
            assistant("Noted: probably FreshTech Expo this summer."),
        ),
        block(
            "amount",
            user("Paul called: they want more seats, so the renewal is now 52,000."),
            call("crm.update_opportunity", {"name": RENEWAL, "amount": 52000}),
            result("crm.update_opportunity", {"name": RENEWAL, "stage": "Proposal", "amount": 52000}),
            assistant("Updated: the Northgate Foods renewal is now 52,000."),
        ),
    ),
    session(
        "2026-04-22T09:15:00+00:00",
        block(
            "paul-moves",
            user(
                "Whoa: Paul Ambrose just told me he's leaving Northgate Foods to become head of procurement "
                "at Norgate Pharma."
            ),
            assistant("Noted: Paul Ambrose moves to Norgate Pharma as head of procurement."),
        ),
        block(
            "lucy",
            user(
                "His replacement at Northgate Foods is Lucy Tran. Don't confuse her with Lucia Tramonti at "
                "Northgate Freight."
            ),
            assistant("Noted: Lucy Tran is the new contact at Northgate Foods; Lucia Tramonti stays at Northgate Freight."),
        ),
        block(
            "crm-contact",
            user("Update the contact in the CRM."),
            call("crm.update_account", {"name": "Northgate Foods", "primary_contact": "Lucy Tran"}),
            result(
                "crm.update_account",
                {"account": "Northgate Foods", "primary_contact": {"name": "Lucy Tran", "title": "Head of Procurement"}},
            ),
            assistant("Done: Lucy Tran is now the primary contact for Northgate Foods."),
        ),
        block(
            "lucy-pref",
            user("Lucy prefers video calls to phone calls, the opposite of Paul."),
            assistant("Noted: video calls for Lucy Tran."),
        ),
    ),
    session(
        "2026-04-29T08:50:00+00:00",
        block(
            "expo-booked",
            user("It's confirmed: FreshTech Expo, June 3 to 5 in Las Vegas. Tariq Bello and I are going."),
            assistant("Noted: FreshTech Expo, June 3 to 5, Las Vegas, you and Tariq Bello."),
        ),
        block(
            "tariq",
            user("Tariq Bello is the other account executive on Helen's team."),
            assistant("Noted: Tariq Bello, account executive, reports to Helen Strand."),
        ),
        block(
            "stage-negotiation",
            user("The renewal's in Negotiation now; Paula is reviewing the redlines."),
            call("crm.update_opportunity", {"name": RENEWAL, "stage": "Negotiation"}),
            result("crm.update_opportunity", {"name": RENEWAL, "stage": "Negotiation", "amount": 52000}),
            assistant("Updated: Negotiation, with Paula Ambrosi reviewing the redlines."),
        ),
        block(
            "norgate-opportunity",
            user("Paul wants to bring us into Norgate Pharma too. New opportunity: the Norgate Pharma expansion, 75,000."),
            assistant("Added: Norgate Pharma expansion, 75,000, contact Paul Ambrose."),
        ),
        block(
            "wren",
            user("Norgate Pharma's IT director is Dr. Wren Adair; Paul says she has to sign off on any software."),
            assistant("Noted: Dr. Wren Adair, IT director at Norgate Pharma, signs off on software."),
        ),
    ),
    session(
        "2026-05-06T09:05:00+00:00",
        block(
            "handoff",
            user("Helen is rebalancing territories: the Northgate Freight account goes to Tariq from today, pilot included."),
            call("crm.update_account", {"name": "Northgate Freight", "owner": "Tariq Bello"}),
            result(
                "crm.update_account",
                {
                    "account": "Northgate Freight",
                    "owner": "Tariq Bello",
                    "opportunities": [{"name": "Northgate Freight pilot", "owner": "Tariq Bello", "stage": "Proposal"}],
                },
            ),
            assistant("Done: Northgate Freight and its pilot are now owned by Tariq Bello."),
        ),
        block(
            "demo",
            user("Schedule a demo with Norgate Pharma next week."),
            call(
                "calendar.create_event",
                {
                    "title": "Norgate Pharma demo",
                    "date": "2026-05-14",
                    "start": "15:00",
                    "location": "Raleigh office",
                    "attendees": ["Beatrix Holloway", "Paul Ambrose", "Wren Adair"],
                },
            ),
            result("calendar.create_event", {"status": "created", "title": "Norgate Pharma demo", "date": "2026-05-14"}),
            assistant(
                "Booked: the Norgate Pharma demo on May 14 at 15:00 at their Raleigh office, with Paul Ambrose "
                "and Wren Adair."
            ),
        ),
        block(
            "still-own",
            user("So which of my three accounts do I still own?"),
            assistant("Two: Northgate Foods and Norgate Pharma. Northgate Freight is Tariq's now."),
        ),
    ),
    session(
        "2026-05-13T08:40:00+00:00",
        block(
            "won",
            user("We closed the Northgate Foods renewal! Closed Won at 52,000."),
            call("crm.update_opportunity", {"name": RENEWAL, "stage": "Closed Won"}),
            result("crm.update_opportunity", {"name": RENEWAL, "stage": "Closed Won", "amount": 52000}),
            assistant("Congratulations! The Northgate Foods renewal is Closed Won at 52,000."),
        ),
        block(
            "demo-moved",
            user("Wren asked to move tomorrow's Norgate demo to May 21, same time."),
            call("calendar.update_event", {"title": "Norgate Pharma demo", "date": "2026-05-21"}),
            result(
                "calendar.update_event",
                {"status": "updated", "title": "Norgate Pharma demo", "date": "2026-05-21", "start": "15:00"},
            ),
            assistant("Moved: the Norgate Pharma demo is now May 21 at 15:00."),
        ),
    ),
    session(
        "2026-05-20T09:30:00+00:00",
        block(
            "contract-reviewed",
            user("Paula finished reviewing the Norgate contract draft: no issues."),
            assistant("Great, the Norgate Pharma contract draft is cleared by legal."),
        ),
        block(
            "expo-prep",
            user("Tariq is printing the booth banners for the expo."),
            assistant("Noted: Tariq Bello has the booth banners."),
        ),
    ),
)

ENTITIES = (
    entity("Beatrix Holloway", "person", "Bea", role="account executive"),
    entity("Cindergate Analytics", "organization", "Cindergate"),
    entity("Helen Strand", "person", "Helen", role="sales director"),
    entity("Northgate Foods", "organization"),
    entity("Spokane", "location"),
    entity("Northgate Freight", "organization"),
    entity("Reno", "location"),
    entity("Norgate Pharma", "organization"),
    entity("Raleigh", "location"),
    entity("Paul Ambrose", "person", "Paul", role="head of procurement"),
    entity(RENEWAL, "project", stage="Closed Won", amount="52,000"),
    entity("Paula Ambrosi", "person", "Paula", role="legal counsel"),
    entity("Oskar Lind", "person", "Oskar", role="CFO"),
    entity("Lucia Tramonti", "person", role="buyer"),
    entity("Northgate Freight pilot", "project", amount="20,000", close_date="June 30"),
    entity("FreshTech Expo", "event", date="June 3 to 5"),
    entity("Las Vegas", "location"),
    entity("Lucy Tran", "person", "Lucy", role="Head of Procurement"),
    entity("Tariq Bello", "person", "Tariq", role="account executive"),
    entity("Norgate Pharma expansion", "project", amount="75,000"),
    entity("Wren Adair", "person", "Dr. Wren Adair", "Wren", role="IT director"),
    entity("Norgate Pharma demo", "event", date="May 21"),
    entity("Raleigh office", "location"),
)

RELATIONS = (
    relation("Beatrix Holloway", "works_for", "Cindergate Analytics"),
    relation("Beatrix Holloway", "reports_to", "Helen Strand"),
    relation("Tariq Bello", "reports_to", "Helen Strand"),
    relation("Paula Ambrosi", "works_for", "Cindergate Analytics"),
    relation("Northgate Foods", "located_in", "Spokane"),
    relation("Northgate Freight", "located_in", "Reno"),
    relation("Norgate Pharma", "located_in", "Raleigh"),
    relation("Paul Ambrose", "works_for", "Northgate Foods"),
    relation("Paul Ambrose", "works_for", "Norgate Pharma"),
    relation("Lucy Tran", "works_for", "Northgate Foods"),
    relation("Oskar Lind", "works_for", "Northgate Freight"),
    relation("Lucia Tramonti", "works_for", "Northgate Freight"),
    relation("Wren Adair", "works_for", "Norgate Pharma"),
    relation(RENEWAL, "part_of", "Northgate Foods"),
    relation("Northgate Freight pilot", "part_of", "Northgate Freight"),
    relation("Norgate Pharma expansion", "part_of", "Norgate Pharma"),
    relation("Beatrix Holloway", "works_on", RENEWAL),
    relation("Paula Ambrosi", "works_on", RENEWAL),
    relation("Beatrix Holloway", "works_on", "Northgate Freight pilot"),
    relation("Tariq Bello", "works_on", "Northgate Freight pilot"),
    relation("Beatrix Holloway", "works_on", "Norgate Pharma expansion"),
    relation("Beatrix Holloway", "attends", "FreshTech Expo"),
    relation("Tariq Bello", "attends", "FreshTech Expo"),
    relation("FreshTech Expo", "located_in", "Las Vegas"),
    relation("Norgate Pharma demo", "located_in", "Raleigh office"),
    relation("Raleigh office", "located_in", "Raleigh"),
    relation("Beatrix Holloway", "attends", "Norgate Pharma demo"),
    relation("Paul Ambrose", "attends", "Norgate Pharma demo"),
    relation("Wren Adair", "attends", "Norgate Pharma demo"),
)

QUESTIONS = (
    ask("What stage is the Northgate Foods renewal in now?", "Closed Won", TEMPORAL, "won", "won@2"),
    ask(
        "What stage was the Northgate Foods renewal in just before Negotiation?",
        "Proposal",
        TEMPORAL,
        "stage-proposal",
        "stage-proposal@2",
    ),
    ask("What is the Northgate Foods renewal worth now?", "52,000", TEMPORAL, "amount", "amount@2", accepted=("52000",)),
    ask("What was the renewal's amount when Bea first pulled up the account?", "48000", TEMPORAL, "crm-foods@2", accepted=("48,000",)),
    ask("Who is Northgate Foods' primary contact now?", "Lucy Tran", TEMPORAL, "lucy", "crm-contact@2"),
    ask("Where does Paul Ambrose work now?", "Norgate Pharma", TEMPORAL, "paul-moves"),
    ask("Who owns the Northgate Freight account now?", "Tariq Bello", TEMPORAL, "handoff", "handoff@2"),
    ask(
        "Who owned the Northgate Freight account before Tariq?",
        "Beatrix Holloway",
        TEMPORAL,
        "intro",
        "accounts",
        accepted=("Bea",),
    ),
    ask("When is the Norgate Pharma demo now?", "May 21", TEMPORAL, "demo-moved", accepted=("2026-05-21",)),
    ask(
        "For which date was the Norgate Pharma demo first booked?",
        "May 14",
        TEMPORAL,
        "demo@1",
        "demo@3",
        accepted=("2026-05-14",),
    ),
    ask("Where is Northgate Freight based?", "Reno", SINGLE, "accounts"),
    ask("Where is Norgate Pharma based?", "Raleigh", SINGLE, "accounts"),
    ask("Who is the CFO of Northgate Freight?", "Oskar Lind", SINGLE, "freight-contacts"),
    ask("Who reviews every contract at Cindergate?", "Paula Ambrosi", SINGLE, "legal"),
    ask("Where is FreshTech Expo held?", "Las Vegas", SINGLE, "expo-booked"),
    ask("Who is Norgate Pharma's IT director?", "Wren Adair", SINGLE, "wren"),
    ask("Who is Bea's sales director?", "Helen Strand", SINGLE, "manager"),
    ask("What is the Northgate Freight pilot worth?", "20,000", SINGLE, "pilot"),
    ask("By when should the Northgate Freight pilot close?", "June 30", SINGLE, "pilot"),
    ask("What is the Norgate Pharma expansion worth?", "75,000", SINGLE, "norgate-opportunity"),
    ask("When is the trade show Helen wanted them at?", "June 3 to 5", MULTI, "expo-plan", "expo-booked"),
    ask(
        "Who is the buyer at the account that Tariq Bello took over?",
        "Lucia Tramonti",
        MULTI,
        "freight-contacts",
        "handoff",
    ),
    ask(
        "Who has to sign off on software at the company Paul Ambrose joined?",
        "Wren Adair",
        MULTI,
        "paul-moves",
        "wren",
    ),
    ask("How should Bea reach Paul Ambrose?", "call him", PREFERENCE, "paul-pref"),
    ask("How does Lucy Tran prefer to talk?", "video calls", PREFERENCE, "lucy-pref"),
    ask("How does Oskar Lind want quotes?", "in writing", PREFERENCE, "oskar-pref"),
    ask(
        "Which accounts does Bea still own after the territory change?",
        "Northgate Foods and Norgate Pharma",
        AGGREGATION,
        "accounts",
        "handoff",
        "still-own@1",
    ),
    unknown("What is Tariq Bello's sales quota?"),
    unknown("How many employees does Norgate Pharma have?"),
    unknown("Where is Cindergate Analytics headquartered?"),
)

# What people said that no relation holds: how each contact likes to be reached, a deal's stage and
# amount as they change, plans that move (the trade show, the demo), dated events. A fact about Bea
# ("I ...") also cites the intro, where she gives her name.
FACTS = (
    fact(
        "Bea owns all three accounts: Northgate Foods, Northgate Freight and Norgate Pharma",
        STATE,
        ("Beatrix Holloway", "Northgate Foods", "Northgate Freight", "Norgate Pharma"),
        "intro",
        "accounts",
        topic="accounts",
    ),
    fact(
        "The Northgate Foods renewal is in Discovery",
        STATE,
        RENEWAL,
        "crm-foods@2",
        topic="stage",
    ),
    fact(
        "The Northgate Foods renewal amount is 48000",
        STATE,
        RENEWAL,
        "crm-foods@2",
        topic="amount",
    ),
    fact(
        "Paul hates email: always call him instead",
        PREFERENCE,
        "Paul Ambrose",
        "paul-pref",
        topic="contact",
    ),
    fact(
        "Oskar wants every quote in writing and won't discuss numbers on a call",
        PREFERENCE,
        "Oskar Lind",
        "oskar-pref",
        topic="quotes",
    ),
    fact(
        "The Northgate Foods renewal moved to Proposal",
        STATE,
        RENEWAL,
        "stage-proposal",
        topic="stage",
    ),
    fact(
        "Helen wants the team at a trade show this summer, probably FreshTech Expo",
        PLAN,
        ("FreshTech Expo", "Helen Strand"),
        "expo-plan",
        topic="trade show",
    ),
    fact(
        "Paul called: Northgate Foods wants more seats, so the renewal is now 52,000",
        STATE,
        (RENEWAL, "Paul Ambrose", "Northgate Foods"),
        "amount",
        topic="amount",
    ),
    fact(
        "Lucy prefers video calls to phone calls, the opposite of Paul",
        PREFERENCE,
        ("Lucy Tran", "Paul Ambrose"),
        "lucy-pref",
        topic="contact",
    ),
    fact(
        "FreshTech Expo is confirmed for June 3 to 5 in Las Vegas, and Bea and Tariq Bello are going",
        PLAN,
        ("FreshTech Expo", "Las Vegas", "Beatrix Holloway", "Tariq Bello"),
        "expo-booked",
        topic="trade show",
        when="2026-06-03",
        said="June 3",
    ),
    fact(
        "The renewal is in Negotiation, with Paula reviewing the redlines",
        STATE,
        (RENEWAL, "Paula Ambrosi"),
        "stage-negotiation",
        topic="stage",
    ),
    fact(
        "Paul wants to bring Cindergate into Norgate Pharma too",
        PLAN,
        ("Paul Ambrose", "Norgate Pharma", "Cindergate Analytics"),
        "norgate-opportunity",
        topic="norgate pharma",
    ),
    fact(
        "Dr. Wren Adair has to sign off on any software at Norgate Pharma",
        STATE,
        ("Wren Adair", "Norgate Pharma"),
        "wren",
        topic="sign off",
    ),
    fact(
        "Helen is rebalancing territories: the Northgate Freight account goes to Tariq from today, pilot included",
        EVENT,
        ("Northgate Freight", "Tariq Bello", "Helen Strand"),
        "handoff",
        when="2026-05-06",
        said="today",
    ),
    fact(
        "The Norgate Pharma demo date is 2026-05-14, start 15:00, at the Raleigh office",
        PLAN,
        ("Norgate Pharma demo", "Raleigh office"),
        "demo@1",
        topic="date",
        when="2026-05-14",
        said="2026-05-14",
    ),
    fact(
        "Bea still owns two accounts: Northgate Foods and Norgate Pharma",
        STATE,
        ("Beatrix Holloway", "Northgate Foods", "Norgate Pharma"),
        "still-own",
        "still-own@1",
        topic="accounts",
    ),
    fact(
        "The Northgate Foods renewal is Closed Won at 52,000",
        STATE,
        RENEWAL,
        "won",
        topic="stage",
    ),
    fact(
        "Wren asked to move the Norgate demo to May 21, same time",
        PLAN,
        ("Norgate Pharma demo", "Wren Adair"),
        "demo-moved",
        topic="date",
        when="2026-05-21",
        said="May 21",
    ),
    fact(
        "Paula finished reviewing the Norgate contract draft: no issues",
        EVENT,
        ("Paula Ambrosi", "Norgate Pharma"),
        "contract-reviewed",
    ),
    fact(
        "Tariq is printing the booth banners for the expo",
        PLAN,
        ("Tariq Bello", "FreshTech Expo"),
        "expo-prep",
        topic="booth banners",
    ),
)

SCENARIO = Scenario(
    id="long-tape-account-desk",
    description="A 200+ turn account executive's log over eight dated weeks: look-alike company and contact "
    "names, a deal whose stage and amount change several times, a contact who changes employer and is "
    "replaced, an account handed to a colleague, a demo that moves, and CRM and calendar tool results.",
    tags=(
        "long",
        "test",
        "people",
        "projects",
        "deadlines",
        "temporal",
        "tool-facts",
        "aliases",
        "events",
    ),
    seed=20260401,
    sessions=SESSIONS,
    entities=ENTITIES,
    relations=RELATIONS,
    questions=QUESTIONS,
    facts=FACTS,
)
