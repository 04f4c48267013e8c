// dreamscope-gui [TRACE]: the desktop app. See docs/gui.md.
#include "main_window.h"
#include "timeline_view.h"
#include "whatif_panel.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QDockWidget>
#include <QLineEdit>
#include <QTimer>

#include <cstdio>

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName(QStringLiteral("dreamscope-gui"));
  QApplication::setOrganizationName(QStringLiteral("dreamscope"));
  QApplication::setApplicationVersion(QStringLiteral(DREAMSCOPE_VERSION));

  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral(
      "Explore a dreamscope trace: timeline of CPU threads and GPU streams, search, kernel statistics."));
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument(QStringLiteral("trace"),
                               QStringLiteral("A trace to open: trace.db, or what the importers read; or a "
                                              "distributed job: several files (one per rank), a folder, a glob."),
                               QStringLiteral("[trace...]"));
  // Documentation screenshots and scripted checks: open, search, select, save, quit.
  const QCommandLineOption screenshot(QStringLiteral("screenshot"),
                                      QStringLiteral("Save the window as a PNG once the trace is open, then quit."),
                                      QStringLiteral("file.png"));
  const QCommandLineOption search(QStringLiteral("search"),
                                  QStringLiteral("Search for this regular expression and select the first match."),
                                  QStringLiteral("regex"));
  const QCommandLineOption size(QStringLiteral("size"), QStringLiteral("Window size, e.g. 1400x860."),
                                QStringLiteral("WxH"));
  const QCommandLineOption window_range(QStringLiteral("window"),
                                        QStringLiteral("Show this time range, in ms from the trace's start."),
                                        QStringLiteral("from:to"));
  const QCommandLineOption show(QStringLiteral("show"),
                                QStringLiteral("Bring a panel to the front: search, kernels, breakdowns, whatif."),
                                QStringLiteral("panel"));
  const QCommandLineOption whatif(QStringLiteral("whatif"),
                                  QStringLiteral("Run this what-if scenario (built-in name or TOML file) once the trace is open."),
                                  QStringLiteral("scenario"));
  const QCommandLineOption select(QStringLiteral("select"),
                                  QStringLiteral("Select the first event whose name matches this regular expression."),
                                  QStringLiteral("regex"));
  parser.addOptions({screenshot, search, size, window_range, show, whatif, select});
  parser.process(app);

  dreamscope::gui::MainWindow window;
  if (parser.isSet(size)) {
    const QStringList wh = parser.value(size).split(QLatin1Char('x'));
    if (wh.size() == 2) window.resize(wh[0].toInt(), wh[1].toInt());
  }
  window.show();
  const QStringList args = parser.positionalArguments();
  const bool scripted = parser.isSet(screenshot);
  if (scripted && args.isEmpty()) {
    std::fprintf(stderr, "dreamscope-gui: --screenshot needs a trace\n");
    return 2;
  }
  auto save_screenshot = [&] {
    // A few event-loop turns so that layouts and background analyses settle before the grab.
    QTimer::singleShot(1500, &window, [&] {
      const QString file = parser.value(screenshot);
      if (!window.grab().save(file)) {
        std::fprintf(stderr, "dreamscope-gui: cannot write %s\n", qPrintable(file));
        QApplication::exit(1);
        return;
      }
      QApplication::exit(0);
    });
  };
  QObject::connect(&window, &dreamscope::gui::MainWindow::loaded, &window, [&] {
    if (parser.isSet(show)) {
      if (auto* dock = window.findChild<QDockWidget*>(parser.value(show))) dock->raise();
    }
    if (parser.isSet(window_range)) {
      const QStringList r = parser.value(window_range).split(QLatin1Char(':'));
      const auto begin = window.document()->trace().begin_time();
      if (r.size() == 2) {
        window.timeline()->zoom_to(begin + static_cast<dreamscope::TimeNs>(r[0].toDouble() * 1e6),
                                   begin + static_cast<dreamscope::TimeNs>(r[1].toDouble() * 1e6));
      }
    }
    if (parser.isSet(select)) {
      // Found through the search, which is then cleared so nothing stays dimmed.
      window.search_field()->setText(parser.value(select));
      window.run_search();
      window.next_match(+1);
      window.search_field()->clear();
      window.run_search();
    }
    if (parser.isSet(search)) {
      window.search_field()->setText(parser.value(search));
      window.run_search();
      window.next_match(+1);
    }
    if (parser.isSet(whatif) && window.whatif()) {
      if (!window.whatif()->choose_scenario(parser.value(whatif))) {
        std::fprintf(stderr, "dreamscope-gui: %s\n", qPrintable(window.whatif()->last_error()));
        QApplication::exit(1);
        return;
      }
      if (scripted) {
        QObject::connect(window.whatif(), &dreamscope::gui::WhatIfPanel::finished, &window, [&](bool ok) {
          if (!ok) std::fprintf(stderr, "dreamscope-gui: %s\n", qPrintable(window.whatif()->last_error()));
          save_screenshot();
        });
      }
      window.whatif()->run();
      return;
    }
    if (scripted) save_screenshot();
  });
  if (scripted) {
    QObject::connect(&window, &dreamscope::gui::MainWindow::load_failed, &window, [](const QString& message) {
      std::fprintf(stderr, "dreamscope-gui: %s\n", qPrintable(message));
      QApplication::exit(1);
    });
  }
  if (!args.isEmpty()) window.open_files(args);
  return QApplication::exec();
}
