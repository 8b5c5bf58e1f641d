"""The CronJob controller (`cronjob-controller`, alias `cronjob`), registered through the `aiokcm.controllers`
entry point `cronjob-controller = "controllers.cronjob:CronJobController"`."""

from controllers.cronjob.controller import CronJobController

__all__ = ["CronJobController"]
