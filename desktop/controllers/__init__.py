"""Controllers: QObjects that act on the service for the views (off the GUI thread) and report back through
signals. They hold no widgets and are not item models; the views and models subscribe to them."""
