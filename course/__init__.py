"""The machinery that teaches the series, kept apart from what it teaches (``helpers``).

Subpackages:
    exercises  checkers for the notebooks' exercises: seeded cases, named mistakes, hints in tiers
    explorer   the interactive attention view (offline HTML and JavaScript, with a PNG fallback)
    publish    the static HTML site and the reveal.js slide decks built from the notebooks
    qa         maintainer tools: the mutation check, the platform check, reading time, notebook re-execution

The teacher's commands (TEACHING.md, "Session 0" and "Assessment and grading"):
    python -m course.doctor               check a student's set-up in seconds, one line per check
    python -m course.student_copy OUT     the repository without solutions or answer keys, graded mode on
    python -m course.grade FOLDER --csv grades.csv
                                          run students' notebooks, one CSV row per checked exercise
"""
