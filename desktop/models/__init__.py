"""View models: Qt item models and controllers over the service layer. No widgets here."""
