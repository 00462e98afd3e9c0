"""The notebooks as a static HTML site (``python -m course.publish.site``) and as slide decks
(``python -m course.publish.slides``)."""
