// dreamscope-gui [TRACE]: the desktop app. See docs/gui.md.
#include "main_window.h"
#include "timeline_view.h"

#include <QApplication>
#include <QCommandLineParser>
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
                               QStringLiteral("A trace to open: trace.db, or what the importers read."),
                               QStringLiteral("[trace]"));
  // Documentation screenshots and scripted checks: open, search, select, save, quit.
  const QCommandLineOption screenshot(QStringLiteral("screenshot"),
                                      QStringLiteral("Save the window as a PNG once the trace is open, then quit."),
                                      QStringLiteral("file.png"));
  const QCommandLineOption search(QStringLiteral("search"),
                                  QStringLiteral("Search for this regular expression and select the first match."),
                                  QStringLiteral("regex"));
  const QCommandLineOption size(QStringLiteral("size"), QStringLiteral("Window size, e.g. 1400x860."),
                                QStringLiteral("WxH"));
  parser.addOptions({screenshot, search, size});
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
  QObject::connect(&window, &dreamscope::gui::MainWindow::loaded, &window, [&] {
    if (parser.isSet(search)) {
      window.search_field()->setText(parser.value(search));
      window.run_search();
      window.next_match(+1);
    }
    if (!scripted) return;
    // One event-loop turn so that layouts settle before the grab.
    QTimer::singleShot(100, &window, [&] {
      const QString file = parser.value(screenshot);
      if (!window.grab().save(file)) {
        std::fprintf(stderr, "dreamscope-gui: cannot write %s\n", qPrintable(file));
        QApplication::exit(1);
        return;
      }
      QApplication::exit(0);
    });
  });
  if (scripted) {
    QObject::connect(&window, &dreamscope::gui::MainWindow::load_failed, &window, [](const QString& message) {
      std::fprintf(stderr, "dreamscope-gui: %s\n", qPrintable(message));
      QApplication::exit(1);
    });
  }
  if (!args.isEmpty()) window.open_file(args.front());
  return QApplication::exec();
}
